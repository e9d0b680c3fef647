package main

import (
	"fmt"
	"regexp"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// checker collects what the API server would refuse.
type checker struct {
	add  func(format string, a ...any)
	name string // kind/name of the object being checked
}

func (c *checker) errf(format string, a ...any) {
	c.add("%s: %s", c.name, fmt.Sprintf(format, a...))
}

// object runs the checks of one decoded object.
func (c *checker) object(kind string, obj any) {
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		c.meta(kind, o.ObjectMeta, validation.IsDNS1123Subdomain)
		for k := range o.Data {
			c.each("data key "+k, validation.IsConfigMapKey(k))
		}
	case *corev1.Secret:
		c.meta(kind, o.ObjectMeta, validation.IsDNS1123Subdomain)
	case *corev1.ServiceAccount:
		c.meta(kind, o.ObjectMeta, validation.IsDNS1123Subdomain)
	case *corev1.PersistentVolumeClaim:
		c.meta(kind, o.ObjectMeta, validation.IsDNS1123Subdomain)
		c.pvcSpec(o.Spec)
	case *corev1.Service:
		c.meta(kind, o.ObjectMeta, validation.IsDNS1035Label)
		c.service(o.Spec)
	case *corev1.Pod:
		c.meta(kind, o.ObjectMeta, validation.IsDNS1123Subdomain)
		c.podSpec(o.Spec, nil)
	case *appsv1.Deployment:
		c.meta(kind, o.ObjectMeta, validation.IsDNS1123Subdomain)
		c.selectorMatches(o.Spec.Selector, o.Spec.Template.Labels)
		c.labels("spec.template.metadata", o.Spec.Template.ObjectMeta)
		c.podSpec(o.Spec.Template.Spec, nil)
	case *appsv1.StatefulSet:
		c.meta(kind, o.ObjectMeta, validation.IsDNS1123Subdomain)
		c.selectorMatches(o.Spec.Selector, o.Spec.Template.Labels)
		c.labels("spec.template.metadata", o.Spec.Template.ObjectMeta)
		if o.Spec.ServiceName != "" {
			c.each("spec.serviceName", validation.IsDNS1035Label(o.Spec.ServiceName))
		}
		claims := map[string]bool{}
		for _, t := range o.Spec.VolumeClaimTemplates {
			c.each("volumeClaimTemplates name", validation.IsDNS1123Label(t.Name))
			claims[t.Name] = true
			c.pvcSpec(t.Spec)
		}
		c.podSpec(o.Spec.Template.Spec, claims)
	case *appsv1.DaemonSet:
		c.meta(kind, o.ObjectMeta, validation.IsDNS1123Subdomain)
		c.selectorMatches(o.Spec.Selector, o.Spec.Template.Labels)
		c.podSpec(o.Spec.Template.Spec, nil)
	case *policyv1.PodDisruptionBudget:
		c.meta(kind, o.ObjectMeta, validation.IsDNS1123Subdomain)
		if (o.Spec.MinAvailable == nil) == (o.Spec.MaxUnavailable == nil) {
			c.errf("spec: exactly one of minAvailable and maxUnavailable")
		}
		c.selector("spec.selector", o.Spec.Selector, true)
	case *networkingv1.NetworkPolicy:
		c.meta(kind, o.ObjectMeta, validation.IsDNS1123Subdomain)
		c.selector("spec.podSelector", &o.Spec.PodSelector, false)
		for i, in := range o.Spec.Ingress {
			for _, p := range in.Ports {
				c.policyPort(fmt.Sprintf("spec.ingress[%d]", i), p)
			}
			for j, f := range in.From {
				c.peer(fmt.Sprintf("spec.ingress[%d].from[%d]", i, j), f)
			}
		}
	case *monitoringv1.ServiceMonitor:
		c.meta(kind, o.ObjectMeta, validation.IsDNS1123Subdomain)
		c.selector("spec.selector", &o.Spec.Selector, true)
		if len(o.Spec.Endpoints) == 0 {
			c.errf("spec.endpoints: at least one")
		}
		for i, e := range o.Spec.Endpoints {
			if (e.Port == "") == (e.TargetPort == nil) {
				c.errf("spec.endpoints[%d]: exactly one of port and targetPort", i)
			}
		}
	case *monitoringv1.PodMonitor:
		c.meta(kind, o.ObjectMeta, validation.IsDNS1123Subdomain)
		c.selector("spec.selector", &o.Spec.Selector, true)
		if len(o.Spec.PodMetricsEndpoints) == 0 {
			c.errf("spec.podMetricsEndpoints: at least one")
		}
		for i, e := range o.Spec.PodMetricsEndpoints {
			if e.Port == nil || *e.Port == "" {
				c.errf("spec.podMetricsEndpoints[%d].port: required", i)
			}
		}
	case *monitoringv1.PrometheusRule:
		c.meta(kind, o.ObjectMeta, validation.IsDNS1123Subdomain)
		c.rules(o.Spec)
	default:
		c.more(kind, obj)
	}
}

// more checks the kinds beyond the workloads and monitoring: the
// injector's webhook configuration and cert-manager's objects.
func (c *checker) more(kind string, obj any) {
	switch o := obj.(type) {
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		c.meta(kind, o.ObjectMeta, validation.IsDNS1123Subdomain)
		if o.Namespace != "" {
			c.errf("metadata.namespace: a webhook configuration is cluster-scoped")
		}
		c.mutatingWebhooks(o.Webhooks)
	case *certificate:
		c.meta(kind, o.ObjectMeta, validation.IsDNS1123Subdomain)
		c.certificate(o.Spec)
	case *issuer:
		c.meta(kind, o.ObjectMeta, validation.IsDNS1123Subdomain)
		if kind == "ClusterIssuer" && o.Namespace != "" {
			c.errf("metadata.namespace: a ClusterIssuer is cluster-scoped")
		}
		if (o.Spec.SelfSigned == nil) == (o.Spec.CA == nil) {
			c.errf("spec: exactly one of selfSigned and ca")
		}
		if o.Spec.CA != nil {
			c.each("spec.ca.secretName", validation.IsDNS1123Subdomain(o.Spec.CA.SecretName))
		}
	default:
		c.add("%s: no checks for this kind", kind)
	}
}

// meta checks the name (by the kind's rule), namespace, labels and
// annotations.
func (c *checker) meta(kind string, m metav1.ObjectMeta, nameRule func(string) []string) {
	c.name = kind + "/" + m.Name
	switch {
	case m.Name == "" && m.GenerateName != "":
		// A pod a controller creates has only generateName at admission
		// (the API server appends a suffix): what the injector sees.
		c.name = kind + "/" + m.GenerateName + "*"
		c.each("metadata.generateName", nameRule(m.GenerateName+"x"))
	case m.Name == "":
		c.errf("metadata.name: required")
	default:
		c.each("metadata.name", nameRule(m.Name))
	}
	if m.Namespace != "" {
		c.each("metadata.namespace", validation.IsDNS1123Label(m.Namespace))
	}
	c.labels("metadata", m)
}

func (c *checker) labels(where string, m metav1.ObjectMeta) {
	for k, v := range m.Labels {
		c.each(where+".labels key "+k, validation.IsQualifiedName(k))
		c.each(where+".labels["+k+"]", validation.IsValidLabelValue(v))
	}
	total := 0
	for k, v := range m.Annotations {
		c.each(where+".annotations key "+k, validation.IsQualifiedName(strings.ToLower(k)))
		total += len(k) + len(v)
	}
	if total > 256*1024 {
		c.errf("%s.annotations: %d bytes, over 256 KiB", where, total)
	}
}

// each reports every message of a validation function.
func (c *checker) each(what string, msgs []string) {
	for _, m := range msgs {
		c.errf("%s: %s", what, m)
	}
}

func (c *checker) selector(where string, s *metav1.LabelSelector, nonEmpty bool) {
	if s == nil {
		c.errf("%s: required", where)
		return
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		c.errf("%s: %v", where, err)
		return
	}
	if nonEmpty && sel.Empty() {
		c.errf("%s: empty (it would select everything)", where)
	}
}

// selectorMatches checks what the API server checks of a workload: a
// non-empty selector that selects its own pod template.
func (c *checker) selectorMatches(s *metav1.LabelSelector, podLabels map[string]string) {
	c.selector("spec.selector", s, true)
	if s == nil {
		return
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err == nil && !sel.Matches(labels.Set(podLabels)) {
		c.errf("spec.selector: does not match the pod template's labels")
	}
}

func (c *checker) pvcSpec(s corev1.PersistentVolumeClaimSpec) {
	if len(s.AccessModes) == 0 {
		c.errf("persistentVolumeClaim: at least one access mode")
	}
	if q, ok := s.Resources.Requests[corev1.ResourceStorage]; !ok || q.Sign() <= 0 {
		c.errf("persistentVolumeClaim: resources.requests.storage must be positive")
	}
}

func (c *checker) service(s corev1.ServiceSpec) {
	if len(s.Ports) == 0 {
		c.errf("spec.ports: at least one")
	}
	names := map[string]bool{}
	for i, p := range s.Ports {
		if len(s.Ports) > 1 && p.Name == "" {
			c.errf("spec.ports[%d].name: required when there are several ports", i)
		}
		if p.Name != "" {
			c.each(fmt.Sprintf("spec.ports[%d].name", i), validation.IsDNS1123Label(p.Name))
			if names[p.Name] {
				c.errf("spec.ports[%d].name: %q twice", i, p.Name)
			}
			names[p.Name] = true
		}
		c.each(fmt.Sprintf("spec.ports[%d].port", i), validation.IsValidPortNum(int(p.Port)))
		c.intOrPort(fmt.Sprintf("spec.ports[%d].targetPort", i), p.TargetPort, true)
	}
	for k, v := range s.Selector {
		c.each("spec.selector key "+k, validation.IsQualifiedName(k))
		c.each("spec.selector["+k+"]", validation.IsValidLabelValue(v))
	}
}

// intOrPort checks a port given by number or by name.
func (c *checker) intOrPort(where string, p intstr.IntOrString, zeroOK bool) {
	if p.Type == intstr.String {
		c.each(where, validation.IsValidPortName(p.StrVal))
		return
	}
	if p.IntVal == 0 && zeroOK {
		return
	}
	c.each(where, validation.IsValidPortNum(int(p.IntVal)))
}

func (c *checker) policyPort(where string, p networkingv1.NetworkPolicyPort) {
	if p.Port != nil {
		c.intOrPort(where+".ports.port", *p.Port, false)
	}
	if p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP && *p.Protocol != corev1.ProtocolUDP && *p.Protocol != corev1.ProtocolSCTP {
		c.errf("%s.ports.protocol: %q", where, *p.Protocol)
	}
}

func (c *checker) peer(where string, p networkingv1.NetworkPolicyPeer) {
	n := 0
	if p.PodSelector != nil {
		n++
		c.selector(where+".podSelector", p.PodSelector, false)
	}
	if p.NamespaceSelector != nil {
		n++
		c.selector(where+".namespaceSelector", p.NamespaceSelector, false)
	}
	if p.IPBlock != nil {
		if n > 0 {
			c.errf("%s: ipBlock goes alone", where)
		}
		n++
	}
	if n == 0 {
		c.errf("%s: empty peer", where)
	}
}

// podSpec checks containers, ports, probes, mounts and volumes. claims are
// the volume claim templates of a StatefulSet (mountable by name).
func (c *checker) podSpec(s corev1.PodSpec, claims map[string]bool) {
	volumes := map[string]bool{}
	for name := range claims {
		volumes[name] = true
	}
	for i, v := range s.Volumes {
		where := fmt.Sprintf("spec.volumes[%d]", i)
		c.each(where+".name", validation.IsDNS1123Label(v.Name))
		if volumes[v.Name] {
			c.errf("%s.name: %q twice", where, v.Name)
		}
		volumes[v.Name] = true
		c.volumeSource(where, v.VolumeSource)
	}
	if len(s.Containers) == 0 {
		c.errf("spec.containers: at least one")
	}
	names := map[string]bool{}
	for i, ct := range s.InitContainers {
		c.container(fmt.Sprintf("spec.initContainers[%d]", i), ct, volumes, names, true)
	}
	for i, ct := range s.Containers {
		c.container(fmt.Sprintf("spec.containers[%d]", i), ct, volumes, names, false)
	}
	for k, v := range s.NodeSelector {
		c.each("spec.nodeSelector key "+k, validation.IsQualifiedName(k))
		c.each("spec.nodeSelector["+k+"]", validation.IsValidLabelValue(v))
	}
}

func (c *checker) volumeSource(where string, v corev1.VolumeSource) {
	n := 0
	if v.ConfigMap != nil {
		n++
		if v.ConfigMap.Name == "" {
			c.errf("%s.configMap.name: required", where)
		}
		c.mode(where+".configMap.defaultMode", v.ConfigMap.DefaultMode)
	}
	if v.Secret != nil {
		n++
		if v.Secret.SecretName == "" {
			c.errf("%s.secret.secretName: required", where)
		}
		c.mode(where+".secret.defaultMode", v.Secret.DefaultMode)
	}
	if v.EmptyDir != nil {
		n++
	}
	if v.PersistentVolumeClaim != nil {
		n++
		if v.PersistentVolumeClaim.ClaimName == "" {
			c.errf("%s.persistentVolumeClaim.claimName: required", where)
		}
	}
	if v.Projected != nil {
		n++
	}
	if v.HostPath != nil || v.CSI != nil || v.DownwardAPI != nil || v.Ephemeral != nil || v.NFS != nil {
		n++
	}
	if n != 1 {
		c.errf("%s: exactly one volume source, got %d", where, n)
	}
}

func (c *checker) mode(where string, m *int32) {
	if m != nil && (*m < 0 || *m > 0o777) {
		c.errf("%s: %o is not a file mode", where, *m)
	}
}

var envName = regexp.MustCompile(`^[-._a-zA-Z][-._a-zA-Z0-9]*$`)

func (c *checker) container(where string, ct corev1.Container, volumes, names map[string]bool, init bool) {
	c.each(where+".name", validation.IsDNS1123Label(ct.Name))
	if names[ct.Name] {
		c.errf("%s.name: %q twice in the pod", where, ct.Name)
	}
	names[ct.Name] = true
	if ct.Image == "" {
		c.errf("%s.image: required", where)
	}
	if ct.RestartPolicy != nil {
		if !init {
			c.errf("%s.restartPolicy: only init containers (native sidecars) set it", where)
		} else if *ct.RestartPolicy != corev1.ContainerRestartPolicyAlways {
			c.errf("%s.restartPolicy: only Always", where)
		}
	}
	if init && ct.RestartPolicy == nil && (ct.ReadinessProbe != nil || ct.LivenessProbe != nil || ct.StartupProbe != nil) {
		c.errf("%s: probes on an init container need restartPolicy Always", where)
	}
	ports := map[string]bool{}
	for i, p := range ct.Ports {
		pw := fmt.Sprintf("%s.ports[%d]", where, i)
		c.each(pw+".containerPort", validation.IsValidPortNum(int(p.ContainerPort)))
		if p.Name != "" {
			c.each(pw+".name", validation.IsValidPortName(p.Name))
			if ports[p.Name] {
				c.errf("%s.name: %q twice", pw, p.Name)
			}
			ports[p.Name] = true
		}
	}
	for name, pr := range map[string]*corev1.Probe{"livenessProbe": ct.LivenessProbe, "readinessProbe": ct.ReadinessProbe, "startupProbe": ct.StartupProbe} {
		if pr == nil {
			continue
		}
		pw := where + "." + name
		if pr.HTTPGet != nil {
			c.probePort(pw+".httpGet.port", pr.HTTPGet.Port, ports)
			if !strings.HasPrefix(pr.HTTPGet.Path, "/") {
				c.errf("%s.httpGet.path: %q must start with /", pw, pr.HTTPGet.Path)
			}
		}
		if pr.TCPSocket != nil {
			c.probePort(pw+".tcpSocket.port", pr.TCPSocket.Port, ports)
		}
		if name == "startupProbe" && pr.SuccessThreshold > 1 {
			c.errf("%s.successThreshold: must be 1", pw)
		}
	}
	mounts := map[string]bool{}
	for i, m := range ct.VolumeMounts {
		mw := fmt.Sprintf("%s.volumeMounts[%d]", where, i)
		if !volumes[m.Name] {
			c.errf("%s.name: no volume %q in the pod", mw, m.Name)
		}
		if !strings.HasPrefix(m.MountPath, "/") {
			c.errf("%s.mountPath: %q must be absolute", mw, m.MountPath)
		}
		if mounts[m.MountPath] {
			c.errf("%s.mountPath: %q twice", mw, m.MountPath)
		}
		mounts[m.MountPath] = true
	}
	for i, e := range ct.Env {
		if !envName.MatchString(e.Name) {
			c.errf("%s.env[%d].name: %q is not a variable name", where, i, e.Name)
		}
	}
}

func (c *checker) probePort(where string, p intstr.IntOrString, ports map[string]bool) {
	if p.Type == intstr.String {
		if !ports[p.StrVal] {
			c.errf("%s: the container has no port named %q", where, p.StrVal)
		}
		return
	}
	c.each(where, validation.IsValidPortNum(int(p.IntVal)))
}

var (
	alertName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	recordName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	promDur    = regexp.MustCompile(`^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$`)
)

// rules checks a PrometheusRule's groups the way Prometheus loads them
// (apart from parsing the PromQL).
func (c *checker) rules(s monitoringv1.PrometheusRuleSpec) {
	if len(s.Groups) == 0 {
		c.errf("spec.groups: at least one")
	}
	groups := map[string]bool{}
	for i, g := range s.Groups {
		gw := fmt.Sprintf("spec.groups[%d]", i)
		if g.Name == "" {
			c.errf("%s.name: required", gw)
		}
		if groups[g.Name] {
			c.errf("%s.name: %q twice", gw, g.Name)
		}
		groups[g.Name] = true
		if len(g.Rules) == 0 {
			c.errf("%s.rules: at least one", gw)
		}
		for j, r := range g.Rules {
			rw := fmt.Sprintf("%s.rules[%d]", gw, j)
			switch {
			case (r.Alert == "") == (r.Record == ""):
				c.errf("%s: exactly one of alert and record", rw)
			case r.Alert != "" && !alertName.MatchString(r.Alert):
				c.errf("%s.alert: %q is not a valid name", rw, r.Alert)
			case r.Record != "" && !recordName.MatchString(r.Record):
				c.errf("%s.record: %q is not a valid metric name", rw, r.Record)
			}
			if strings.TrimSpace(r.Expr.String()) == "" {
				c.errf("%s.expr: required", rw)
			}
			if r.For != nil && !promDur.MatchString(string(*r.For)) {
				c.errf("%s.for: %q is not a Prometheus duration", rw, *r.For)
			}
			for k := range r.Labels {
				if !labelName.MatchString(k) {
					c.errf("%s.labels: %q is not a label name", rw, k)
				}
			}
			if r.Record != "" && (len(r.Annotations) > 0 || r.For != nil) {
				c.errf("%s: a recording rule has no annotations or for", rw)
			}
		}
	}
}
