package server_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/registry/server"
	"github.com/fencegate/fencegate/tlsfiles/tlsfilestest"
)

// mtlsRegistry runs a registry in mTLS mode (memory backend, admin token
// "s3cret") and returns its base URL and clients: one without a
// certificate, one with a certificate of the registry's CA, one with a
// certificate of another CA.
func mtlsRegistry(t *testing.T) (base string, anon, owner, stranger *http.Client) {
	t.Helper()
	dir := t.TempDir()
	ca, other := tlsfilestest.NewCA(t, "registry CA"), tlsfilestest.NewCA(t, "another CA")
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	srv := ca.Server(t, "127.0.0.1")
	c := server.Default()
	c.Listen, c.DataDir, c.Backend = "127.0.0.1:0", dir, "memory"
	c.TLS.CertFile, c.TLS.KeyFile, c.TLS.ClientCAFile = write("srv.crt", srv.CertPEM), write("srv.key", srv.KeyPEM), write("ca.crt", ca.PEM)
	c.Identity = identity.Config{Mode: identity.ModeMTLS, TrustDomain: "td"}
	c.Admin.TokenFile = write("token", []byte("s3cret\n"))
	s, err := server.New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	// A client with a certificate always sends it: with Certificates, Go
	// sends none that the server's list of acceptable CAs does not name,
	// and the stranger would be tested as a client without one.
	clientWith := func(certs ...tls.Certificate) *http.Client {
		tc := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
		if len(certs) > 0 {
			tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &certs[0], nil }
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
	}
	leaf := ca.Client(t, "spiffe://td/ns/a/sa/worker")
	mine, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	theirLeaf := other.Client(t, "spiffe://td/ns/a/sa/worker")
	theirs, err := tls.X509KeyPair(theirLeaf.CertPEM, theirLeaf.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range []*http.Client{clientWith(), clientWith(mine), clientWith(theirs)} {
		t.Cleanup(cl.CloseIdleConnections)
	}
	return "https://" + s.Addr(), clientWith(), clientWith(mine), clientWith(theirs)
}

// call sends one request and returns the status, the problem code (if
// any) and the body.
func call(t *testing.T, cl *http.Client, method, u, body string, hdr ...string) (int, fencegate.Code, string, error) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := cl.Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var p fencegate.Problem
	if resp.StatusCode >= 400 {
		_ = json.Unmarshal(b, &p)
	}
	return resp.StatusCode, p.Code, string(b), nil
}

// TestMTLSProbesWithoutCertificateEveryV1RouteWithOne: in mTLS mode the
// probes, /metrics and the JWKS answer a caller without a client
// certificate, while every /v1 route (leases, requests, grants, resources,
// admin, even with the admin token) and /debug refuse it with
// IDENTITY_REQUIRED and change nothing; a caller with a certificate of the
// registry's CA is served as before, and one of another CA is refused at
// the handshake.
func TestMTLSProbesWithoutCertificateEveryV1RouteWithOne(t *testing.T) {
	base, anon, owner, stranger := mtlsRegistry(t)

	// A lease held by the certificate's owner, to aim the calls at.
	st, _, body, err := call(t, owner, "POST", base+"/v1/leases", `{"resource":"inv/1","requestId":"r1","ttlMs":60000}`)
	if err != nil || st != http.StatusCreated {
		t.Fatalf("acquire with a certificate: %d %s %v", st, body, err)
	}
	var held fencegate.Lease
	if err := json.Unmarshal([]byte(body), &held); err != nil || held.Owner != "spiffe://td/ns/a/sa/worker" {
		t.Fatalf("acquire: %s %v", body, err)
	}
	snapshot := func() string {
		t.Helper()
		var parts []string
		for _, p := range []string{"/v1/resources/inv/1", "/v1/resources/inv/2", "/v1/leases/" + held.Lease + "/status", "/v1/admin/meta", "/v1/admin/policies"} {
			st, _, b, err := call(t, owner, "GET", base+p, "", "Authorization", "Bearer s3cret")
			if err != nil {
				t.Fatal(err)
			}
			// Proofs are signed per read: keep what states the lease.
			var l map[string]any
			if json.Unmarshal([]byte(b), &l) == nil {
				delete(l, "status")
				delete(l, "expiresAt")
				delete(l, "statusExpiresAt")
				nb, _ := json.Marshal(l)
				b = string(nb)
			}
			parts = append(parts, p+" "+http.StatusText(st)+" "+b)
		}
		return strings.Join(parts, "\n")
	}
	before := snapshot()

	for _, p := range []string{"/healthz", "/readyz", "/metrics", "/.well-known/jwks.json"} {
		if st, _, body, err := call(t, anon, "GET", base+p, ""); err != nil || st != http.StatusOK {
			t.Errorf("GET %s without a certificate: %d %s %v", p, st, body, err)
		}
	}
	routes := []struct{ method, path, body string }{
		{"POST", "/v1/leases", `{"resource":"inv/2","requestId":"r2","ttlMs":60000}`},
		{"POST", "/v1/leases", `{"resource":"inv/1","requestId":"r1","ttlMs":60000}`},
		{"GET", "/v1/requests/r1", ""},
		{"GET", "/v1/leases/" + held.Lease, ""},
		{"GET", "/v1/leases/" + held.Lease + "/status", ""},
		{"POST", "/v1/leases/" + held.Lease + "/renew", `{"ttlMs":60000}`},
		{"POST", "/v1/leases/" + held.Lease + "/release", ""},
		{"GET", "/v1/grants/" + fencegate.Digest([]byte(held.Grant)) + "/status", ""},
		{"GET", "/v1/resources/inv/1", ""},
		{"POST", "/v1/admin/epoch", ""},
		{"POST", "/v1/admin/fence-floor", `{"floor":1000}`},
		{"GET", "/v1/admin/policies", ""},
		{"PUT", "/v1/admin/policies", `{"pattern":"inv/*","owners":["spiffe://td/x"]}`},
		{"DELETE", "/v1/admin/policies?pattern=inv/*", ""},
		{"GET", "/v1/admin/meta", ""},
		{"GET", "/v1/no/such/route", ""},
		{"GET", "/debug/pprof/", ""},
		{"GET", "/debug/vars", ""},
	}
	for _, r := range routes {
		for _, token := range []string{"", "Bearer s3cret"} {
			st, code, body, err := call(t, anon, r.method, base+r.path, r.body, "Authorization", token)
			if err != nil || st != http.StatusUnauthorized || code != fencegate.CodeIdentityRequired {
				t.Errorf("%s %s without a certificate (authorization %q): %d %s %s %v", r.method, r.path, token, st, code, body, err)
			}
		}
		// A certificate of another CA does not get through the handshake.
		if _, _, _, err := call(t, stranger, r.method, base+r.path, r.body); err == nil {
			t.Errorf("%s %s with a certificate of another CA: answered", r.method, r.path)
		}
	}
	if after := snapshot(); after != before {
		t.Fatalf("the calls without a certificate changed the registry:\nbefore:\n%s\nafter:\n%s", before, after)
	}

	// The failed calls are counted by operation and code, and the build
	// is on /metrics, all without a certificate.
	_, _, metrics, err := call(t, anon, "GET", base+"/metrics", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`fencegate_registry_errors_total{code="IDENTITY_REQUIRED",op="acquire"} 4`,
		`fencegate_registry_errors_total{code="IDENTITY_REQUIRED",op="admin"} 12`,
		`fencegate_registry_errors_total{code="LEASE_HELD",op="acquire"} 0`,
		`fencegate_build_info{component="registry",`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
