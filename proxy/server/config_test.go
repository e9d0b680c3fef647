package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/proxy/server"
)

func TestExampleConfigLoadsAndValidates(t *testing.T) {
	c, err := server.Load("../../docs/proxy.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("the documented example does not validate:\n%v", err)
	}
	if len(c.Routes) != 2 || c.Routes[0].Resource != "invoice-batch/{id}" || !c.Routes[0].IdempotencyKey {
		t.Fatalf("routes: %+v", c.Routes)
	}
}

// TestValidateReportsEveryError: one Validate call names every problem.
func TestValidateReportsEveryError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(path, []byte(`
listen: nope
backend: {url: ftp://x}
routes:
  - {method: GET, path: "items/{id}", resource: "item/{other}", mode: loud, status: {mode: psychic}}
identity: {mode: header}
store: {backend: floppy}
unmatchedMutations: maybe
`), 0o600)
	c, err := server.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Validate()
	if err == nil {
		t.Fatal("a broken config validated")
	}
	for _, want := range []string{"listen:", "backend.url", "routes[0].method", "routes[0].path", "{other}", "routes[0].mode", "routes[0].status.mode",
		"identity.trustedProxies", "trust.bundle", "store.backend", "unmatchedMutations", "dataDir"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate does not mention %q:\n%v", want, err)
		}
	}
}

func TestUnknownKeysAreErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "typo.yaml")
	os.WriteFile(path, []byte("listn: 127.0.0.1:1\n"), 0o600)
	if _, err := server.Load(path); err == nil || !strings.Contains(err.Error(), "listn") {
		t.Fatalf("a misspelt key was accepted: %v", err)
	}
}
