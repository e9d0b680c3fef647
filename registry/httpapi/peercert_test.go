package httpapi_test

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/keys"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/registry/memory"
)

// TestClientCertRequired: with ClientCertRequired, a request without a
// verified chain gets only the four public paths (spelled exactly); every
// other request, admin with the token included, is IDENTITY_REQUIRED and
// reaches no handler (no lease is created). A request with a verified
// chain goes on to the handlers (which then establish the identity).
func TestClientCertRequired(t *testing.T) {
	k, err := keys.Generate(jwa.EdDSA, nil)
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := keys.NewSigner(k)
	be := memory.NewBackend()
	reg, err := registry.New(registry.Options{Backend: be, Signer: signer})
	if err != nil {
		t.Fatal(err)
	}
	// Insecure-header identities: without the certificate check, every
	// request below would be served.
	res, err := identity.New(identity.Config{Mode: identity.ModeInsecureHeader})
	if err != nil {
		t.Fatal(err)
	}
	jwks, _ := keys.Bundle(false, k)
	promReg := prometheus.NewRegistry()
	h, err := httpapi.New(httpapi.Options{Registry: reg, Identity: res, JWKS: jwks, Admin: httpapi.Admin{Token: "s3cret", AllowLoopback: true},
		Metrics: promReg, Gatherer: promReg, ClientCertRequired: true})
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, path, body string, chain bool) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.RemoteAddr = "127.0.0.1:1"
		req.Header.Set(identity.DefaultHeader, "spiffe://td/w")
		req.Header.Set("Authorization", "Bearer s3cret")
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if chain {
			req.TLS = &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{{}}}, PeerCertificates: []*x509.Certificate{{}}}
		} else {
			req.TLS = &tls.ConnectionState{}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	for _, p := range []string{"/healthz", "/readyz", "/metrics", "/.well-known/jwks.json"} {
		if rec := do("GET", p, "", false); rec.Code != 200 {
			t.Errorf("GET %s without a certificate: %d %s", p, rec.Code, rec.Body)
		}
	}
	acquire := `{"resource":"inv/1","requestId":"r1","ttlMs":1000}`
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/v1/leases", acquire}, {"GET", "/v1/requests/r1", ""}, {"GET", "/v1/leases/l/status", ""},
		{"GET", "/v1/grants/sha256:" + strings.Repeat("0", 64) + "/status", ""}, {"GET", "/v1/resources/inv/1", ""},
		{"POST", "/v1/admin/epoch", ""}, {"GET", "/v1/admin/meta", ""}, {"GET", "/debug/pprof/", ""},
		{"GET", "/%68ealthz", ""}, {"GET", "/healthz/", ""}, {"GET", "/nowhere", ""},
	} {
		rec := do(r.method, r.path, r.body, false)
		p, err := fencegate.ReadProblem(rec.Result())
		if rec.Code != 401 || err != nil || p.Code != fencegate.CodeIdentityRequired {
			t.Errorf("%s %s without a certificate: %d %s", r.method, r.path, rec.Code, rec.Body)
		}
	}
	meta, err := reg.Meta(t.Context())
	if err != nil || meta.IssuerEpoch != 1 {
		t.Fatalf("meta after the refused calls: %+v %v", meta, err)
	}
	if v, err := reg.Resource(t.Context(), "inv/1"); err == nil && v.Holder != nil {
		t.Fatalf("a refused acquire created a lease: %+v", v.Holder)
	}
	if rec := do("POST", "/v1/leases", acquire, true); rec.Code != http.StatusCreated {
		t.Fatalf("acquire with a verified chain: %d %s", rec.Code, rec.Body)
	}
}
