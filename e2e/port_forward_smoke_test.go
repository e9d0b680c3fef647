package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/fencegate/fencegate/tlsfiles/tlsfilestest"
)

// TestSmokeCheckThroughPortForward is the operator guide's smoke check
// ("Install on an empty cluster", step 7) without the cluster: a registry
// in mTLS mode whose serving certificate names only its Service
// (fencegate-registry.fencegate.svc, no IP SAN, as cert-manager issues it
// from docs/k8s/cert-manager/2-registry.yaml) is reached on 127.0.0.1, as
// through kubectl port-forward. `grant acquire` as the guide writes it
// (--tls-server-name the Service's name) gets fence 1; without the flag
// the certificate does not verify for 127.0.0.1 and nothing is granted.
func TestSmokeCheckThroughPortForward(t *testing.T) {
	const service = "fencegate-registry.fencegate.svc"
	ca := tlsfilestest.NewCA(t, "fencegate CA")
	dir := t.TempDir()
	srv := tlsfilestest.WriteFiles(t, dir, ca.Server(t, service), ca.PEM)
	cfg := filepath.Join(t.TempDir(), "registry.yaml")
	writeFile(t, cfg, fmt.Sprintf("tls:\n  certFile: %s\n  keyFile: %s\n  clientCAFile: %s\nidentity:\n  mode: mtls\n  trustDomain: example.org\n", srv.Cert, srv.Key, srv.CA))
	p := start(t, "registry", "registry", "--config", cfg, "--data", t.TempDir(), "--listen", "127.0.0.1:0", "--log-level", "warn")
	addr := p.waitFor(listeningRE, 15*time.Second)
	cli := tlsfilestest.WriteFiles(t, t.TempDir(), ca.Client(t, "spiffe://example.org/ns/fencegate/sa/smoke"), ca.PEM)

	acquire := []string{"grant", "acquire", "--registry", "https://" + addr,
		"--cert", cli.Cert, "--key", cli.Key, "--ca", cli.CA, "--resource", "smoke/1", "--ttl", "5s"}
	if r := run(t, acquire...); r.code == 0 {
		t.Fatalf("acquired through 127.0.0.1 without --tls-server-name, against a certificate for %s only:\n%s", service, r.stdout)
	}
	r := run(t, append(acquire, "--tls-server-name", service)...)
	if r.code != 0 {
		t.Fatalf("the guide's smoke check: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if fields(r.stdout)["fenceToken"] != "1" {
		t.Errorf("the guide's smoke check printed no fenceToken 1:\n%s", r.stdout)
	}
}
