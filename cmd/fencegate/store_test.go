package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/registry/registrytest"
)

// TestAcknowledgeLossUnanchoredSidecar: against a real sidecar whose
// store is not anchored at the registry (no GET /v1/store), store
// acknowledge-loss says that this sidecar's store does not support it and
// that nothing was sent to the registry, exit 6 (not found).
func TestAcknowledgeLossUnanchoredSidecar(t *testing.T) {
	reg, bundle := registrytest.Serve(t)
	srv := runSidecarServer(t, `{url: "http://127.0.0.1:9"}`, reg.URL, bundle)
	dir := t.TempDir()

	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("t"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "store", "acknowledge-loss", "--sidecar", "http://"+srv.AdminAddr(), "--registry", reg.URL, "--admin-token-file", tok)
	if r.code != exitNotFound {
		t.Errorf("exit %d, want %d", r.code, exitNotFound)
	}
	for _, w := range []string{"this sidecar's store does not support acknowledge-loss", "nothing was sent to the registry", "--store"} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "no such route") && !strings.Contains(r.stderr, "does not support") {
		t.Errorf("the bare route error:\n%s", r.stderr)
	}
}
