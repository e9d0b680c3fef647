package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/tlsfiles/tlsfilestest"
)

// probe sends one request and returns its status and problem code.
func probe(t *testing.T, cl *http.Client, method, u, token string) (int, fencegate.Code) {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var p fencegate.Problem
	if resp.StatusCode >= 400 {
		_ = json.Unmarshal(b, &p)
	}
	return resp.StatusCode, p.Code
}

// outsideIP is a non-loopback IPv4 address of this machine, or "".
func outsideIP() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	return ""
}

// TestProbesWithoutCredentials (issue 13), with real binaries:
//   - a registry in mTLS mode answers /healthz, /readyz, /metrics and
//     /.well-known/jwks.json to a client without a certificate, while its
//     /v1 routes, admin included (even with the admin token), answer
//     IDENTITY_REQUIRED to it and serve a client with a certificate;
//   - a sidecar whose health listener's address comes from
//     FENCEGATE_LISTEN_HOST (set to a non-loopback address of this
//     machine) answers the probes and /metrics there without credentials,
//     refuses every other method and route there, while its admin API,
//     reached from that non-loopback address, refuses every route without
//     the token (ADMIN_REQUIRED).
func TestProbesWithoutCredentials(t *testing.T) {
	dir := t.TempDir()
	ca := tlsfilestest.NewCA(t, "probe CA")
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	srv := ca.Server(t, "127.0.0.1")
	regData := filepath.Join(dir, "registry")
	regCfg := write("registry.yaml", []byte(`
listen: 127.0.0.1:0
dataDir: "`+regData+`"
tls: {certFile: "`+write("srv.crt", srv.CertPEM)+`", keyFile: "`+write("srv.key", srv.KeyPEM)+`", clientCAFile: "`+write("ca.crt", ca.PEM)+`"}
identity: {mode: mtls, trustDomain: td}
admin: {tokenFile: "`+write("reg-token", []byte("reg-s3cret\n"))+`"}
log: {level: warn}
`))
	rp := start(t, "registry", "registry", "--config", regCfg)
	regURL := "https://" + rp.waitFor(listeningRE, 15*time.Second)

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	anon := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}
	worker := ca.Client(t, "spiffe://td/ns/a/sa/worker")
	pair, err := tls.X509KeyPair(worker.CertPEM, worker.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	withCert := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}}}
	for _, p := range []string{"/healthz", "/readyz", "/metrics", "/.well-known/jwks.json"} {
		if st, code := probe(t, anon, "GET", regURL+p, ""); st != 200 {
			t.Errorf("registry GET %s without a certificate: %d %s", p, st, code)
		}
	}
	for _, r := range []struct{ method, path string }{
		{"POST", "/v1/leases"}, {"GET", "/v1/requests/r1"}, {"GET", "/v1/leases/l1/status"}, {"POST", "/v1/leases/l1/renew"},
		{"POST", "/v1/leases/l1/release"}, {"GET", "/v1/grants/sha256:" + strings.Repeat("0", 64) + "/status"},
		{"GET", "/v1/resources/inv/1"}, {"GET", "/v1/admin/meta"}, {"POST", "/v1/admin/epoch"}, {"GET", "/debug/pprof/"},
	} {
		for _, token := range []string{"", "reg-s3cret"} {
			if st, code := probe(t, anon, r.method, regURL+r.path, token); st != 401 || code != fencegate.CodeIdentityRequired {
				t.Errorf("registry %s %s without a certificate (token %q): %d %s, want 401 IDENTITY_REQUIRED", r.method, r.path, token, st, code)
			}
		}
	}
	if st, code := probe(t, withCert, "GET", regURL+"/v1/admin/meta", "reg-s3cret"); st != 200 {
		t.Errorf("registry admin meta with a certificate and the token: %d %s", st, code)
	}
	if st, code := probe(t, withCert, "GET", regURL+"/v1/resources/inv/1", ""); st != 200 {
		t.Errorf("registry resource read with a certificate: %d %s", st, code)
	}

	ip := outsideIP()
	if ip == "" {
		t.Skip("no non-loopback IPv4 address: the sidecar's half needs one to look like a pod IP")
	}
	t.Setenv("FENCEGATE_LISTEN_HOST", ip)
	scData := filepath.Join(dir, "sidecar")
	sc := startSidecar(t, `
listen: LISTEN
admin: {listen: "`+net.JoinHostPort(ip, "0")+`", tokenFile: "`+write("sc-token", []byte("sc-s3cret\n"))+`"}
backend: {url: "http://127.0.0.1:1", timeout: 2s}
routes:
  - {method: PUT, path: "/v1/accounts/{id}", resource: "account/{id}", status: {mode: proof}}
identity: {mode: insecure-header}
trust: {bundle: "`+filepath.Join(regData, "keys", "jwks.json")+`"}
store: {backend: memory}
dataDir: "`+scData+`"
log: {level: warn}
`)
	m := regexp.MustCompile(`\(health (\S+)\)`).FindStringSubmatch(sc.Output())
	if m == nil {
		t.Fatalf("the sidecar's start line lacks its health address: %q", sc.Stdout())
	}
	health := m[1]
	if host, _, _ := net.SplitHostPort(health); host != ip {
		t.Fatalf("health listener on %s: FENCEGATE_LISTEN_HOST=%s was not applied to its default", health, ip)
	}
	plain := &http.Client{}
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		for _, method := range []string{"GET", "HEAD"} {
			if st, code := probe(t, plain, method, "http://"+health+p, ""); st != 200 {
				t.Errorf("sidecar health %s %s: %d %s", method, p, st, code)
			}
		}
		for _, method := range []string{"POST", "PUT", "DELETE", "PATCH"} {
			if st, _ := probe(t, plain, method, "http://"+health+p, ""); st != 405 {
				t.Errorf("sidecar health %s %s: %d, want 405", method, p, st)
			}
		}
		// The admin listener from a non-loopback address, without the token.
		if st, code := probe(t, plain, "GET", sc.admin+p, ""); st != 403 || code != fencegate.CodeAdminRequired {
			t.Errorf("sidecar admin GET %s without the token: %d %s", p, st, code)
		}
	}
	for _, r := range []struct{ method, path string }{
		{"GET", "/v1/paused"}, {"GET", "/v1/unknown"}, {"GET", "/v1/quarantine"}, {"GET", "/v1/resources/account/1"},
		{"POST", "/v1/pause"}, {"POST", "/v1/resume"}, {"POST", "/v1/reconcile"}, {"POST", "/v1/trust/reload"}, {"GET", "/debug/pprof/"},
	} {
		if st, code := probe(t, plain, r.method, sc.admin+r.path, ""); st != 403 || code != fencegate.CodeAdminRequired {
			t.Errorf("sidecar admin %s %s without the token: %d %s", r.method, r.path, st, code)
		}
		if st, code := probe(t, plain, r.method, "http://"+health+r.path, ""); st != 404 || code != fencegate.CodeNotFound {
			t.Errorf("sidecar health %s %s: %d %s, want 404", r.method, r.path, st, code)
		}
	}
	if st, code := probe(t, plain, "GET", sc.admin+"/v1/paused", "sc-s3cret"); st != 200 {
		t.Errorf("sidecar admin with the token: %d %s", st, code)
	}
}
