package main

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// mutatingWebhooks checks what the API server's validation of a
// MutatingWebhookConfiguration refuses.
func (c *checker) mutatingWebhooks(hooks []admissionregistrationv1.MutatingWebhook) {
	if len(hooks) == 0 {
		c.errf("webhooks: at least one")
	}
	names := map[string]bool{}
	for i, h := range hooks {
		w := fmt.Sprintf("webhooks[%d]", i)
		if len(strings.Split(h.Name, ".")) < 3 {
			c.errf("%s.name: %q must be a fully qualified name with at least three segments", w, h.Name)
		}
		c.each(w+".name", validation.IsDNS1123Subdomain(h.Name))
		if names[h.Name] {
			c.errf("%s.name: %q twice", w, h.Name)
		}
		names[h.Name] = true
		c.webhookBasics(w, h)
		c.clientConfig(w+".clientConfig", h.ClientConfig)
		if len(h.Rules) == 0 {
			c.errf("%s.rules: at least one", w)
		}
		for j, r := range h.Rules {
			if len(r.Operations) == 0 || len(r.APIVersions) == 0 || len(r.Resources) == 0 || r.APIGroups == nil {
				c.errf("%s.rules[%d]: operations, apiGroups, apiVersions and resources are required", w, j)
			}
		}
		c.selector(w+".namespaceSelector", h.NamespaceSelector, false)
		c.selector(w+".objectSelector", h.ObjectSelector, false)
	}
}

func (c *checker) webhookBasics(w string, h admissionregistrationv1.MutatingWebhook) {
	if h.SideEffects == nil || (*h.SideEffects != admissionregistrationv1.SideEffectClassNone && *h.SideEffects != admissionregistrationv1.SideEffectClassNoneOnDryRun) {
		c.errf("%s.sideEffects: None or NoneOnDryRun is required in admissionregistration.k8s.io/v1", w)
	}
	if len(h.AdmissionReviewVersions) == 0 {
		c.errf("%s.admissionReviewVersions: required", w)
	}
	if h.FailurePolicy != nil && *h.FailurePolicy != admissionregistrationv1.Fail && *h.FailurePolicy != admissionregistrationv1.Ignore {
		c.errf("%s.failurePolicy: %q", w, *h.FailurePolicy)
	}
	if h.ReinvocationPolicy != nil && *h.ReinvocationPolicy != admissionregistrationv1.NeverReinvocationPolicy && *h.ReinvocationPolicy != admissionregistrationv1.IfNeededReinvocationPolicy {
		c.errf("%s.reinvocationPolicy: %q", w, *h.ReinvocationPolicy)
	}
	if h.TimeoutSeconds != nil && (*h.TimeoutSeconds < 1 || *h.TimeoutSeconds > 30) {
		c.errf("%s.timeoutSeconds: %d, must be 1 to 30", w, *h.TimeoutSeconds)
	}
}

func (c *checker) clientConfig(w string, cc admissionregistrationv1.WebhookClientConfig) {
	if (cc.URL == nil) == (cc.Service == nil) {
		c.errf("%s: exactly one of url and service", w)
	}
	if cc.URL != nil {
		if u, err := url.Parse(*cc.URL); err != nil || u.Scheme != "https" {
			c.errf("%s.url: %q is not an https URL", w, *cc.URL)
		}
	}
	if s := cc.Service; s != nil {
		c.each(w+".service.name", validation.IsDNS1035Label(s.Name))
		c.each(w+".service.namespace", validation.IsDNS1123Label(s.Namespace))
		if s.Path != nil && !strings.HasPrefix(*s.Path, "/") {
			c.errf("%s.service.path: %q must start with /", w, *s.Path)
		}
		if s.Port != nil {
			c.each(w+".service.port", validation.IsValidPortNum(int(*s.Port)))
		}
	}
}

// certificate checks a cert-manager Certificate as its webhook does.
func (c *checker) certificate(s certificateSpec) {
	c.each("spec.secretName", validation.IsDNS1123Subdomain(s.SecretName))
	c.certNames(s)
	c.certKey(s)
}

func (c *checker) certNames(s certificateSpec) {
	if s.CommonName == "" && len(s.DNSNames)+len(s.IPAddresses)+len(s.URIs)+len(s.EmailAddresses) == 0 {
		c.errf("spec: at least one of commonName, dnsNames, ipAddresses, uris, emailAddresses")
	}
	for _, d := range s.DNSNames {
		c.each("spec.dnsNames "+d, validation.IsDNS1123Subdomain(strings.TrimPrefix(d, "*.")))
	}
	for _, u := range s.URIs {
		if p, err := url.Parse(u); err != nil || p.Scheme == "" {
			c.errf("spec.uris: %q is not a URI", u)
		}
	}
}

func (c *checker) certKey(s certificateSpec) {
	for what, d := range map[string]string{"duration": s.Duration, "renewBefore": s.RenewBefore} {
		if _, err := time.ParseDuration(d); d != "" && err != nil {
			c.errf("spec.%s: %q is not a duration", what, d)
		}
	}
	for _, u := range s.Usages {
		if !certUsages[u] {
			c.errf("spec.usages: %q is not a key usage", u)
		}
	}
	if k := s.PrivateKey; k != nil && k.Algorithm != "" && !keyAlgorithms[k.Algorithm] {
		c.errf("spec.privateKey.algorithm: %q", k.Algorithm)
	}
	if s.IssuerRef.Name == "" {
		c.errf("spec.issuerRef.name: required")
	}
	if k := s.IssuerRef.Kind; k != "" && k != "Issuer" && k != "ClusterIssuer" && s.IssuerRef.Group == "cert-manager.io" {
		c.errf("spec.issuerRef.kind: %q is not Issuer or ClusterIssuer", k)
	}
}
