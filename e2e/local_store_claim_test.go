package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestLocalStoreClaimsTheService (issue 10.3): a local (bolt) store
// serves one replica only. While a sidecar runs, a second "fencegate
// proxy" with its own bolt store and the same store.service refuses to
// start (after waiting one claimTTL), naming the service and the way out;
// once the first stops cleanly (releasing its claim), a new one starts at
// once although the first's claim would last 5 minutes.
func TestLocalStoreClaimsTheService(t *testing.T) {
	reg := startRegistry(t, "")
	cfg := func(owner, ttl string) string {
		return `
listen: LISTEN
admin: {listen: ADMIN}
backend: {url: "http://127.0.0.1:9"}
routes:
  - {method: PUT, path: "/v1/x/{id}", resource: "x/{id}", status: {mode: registry}}
identity: {mode: insecure-header}
trust: {bundle: "` + filepath.Join(reg.dataDir, "keys", "jwks.json") + `"}
registry: {url: "` + reg.url + `"}
store: {backend: bolt, service: e2e-claim-billing, claimIdentity: ` + owner + `, claimTTL: ` + ttl + `}
dataDir: "` + t.TempDir() + `"
`
	}
	first := startSidecar(t, cfg("sidecar-a", "5m"))

	path := filepath.Join(t.TempDir(), "proxy.yaml")
	writeFile(t, path, strings.NewReplacer("LISTEN", "127.0.0.1:0", "ADMIN", "127.0.0.1:0").Replace(cfg("sidecar-b", "1s")))
	r := run(t, "proxy", "--config", path)
	if r.code == 0 || !strings.Contains(r.stderr, `store.service "e2e-claim-billing" is claimed by another sidecar`) ||
		!strings.Contains(r.stderr, "serves one replica only") || !strings.Contains(r.stderr, "store.backend redis") {
		t.Fatalf("a second sidecar of the service with a local store: exit %d\n%s", r.code, r.stderr)
	}

	if err := first.stop(); err != nil {
		t.Fatalf("the first sidecar's clean stop: %v\n%s", err, first.Stderr())
	}
	third := startSidecar(t, cfg("sidecar-c", "1s"))
	if err := third.stop(); err != nil {
		t.Fatalf("the new sidecar's clean stop: %v\n%s", err, third.Stderr())
	}
}
