package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	proxyserver "github.com/fencegate/fencegate/proxy/server"
	"github.com/fencegate/fencegate/registry/registrytest"
)

// TestAcknowledgeLossUnanchoredSidecar: against a real sidecar whose
// store is not anchored at the registry (no GET /v1/store), store
// acknowledge-loss says that this sidecar's store does not support it and
// that nothing was sent to the registry, exit 6 (not found).
func TestAcknowledgeLossUnanchoredSidecar(t *testing.T) {
	reg, bundle := registrytest.Serve(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "proxy.yaml")
	writeTestFile(t, path, `listen: 127.0.0.1:0
admin: {listen: 127.0.0.1:0}
health: {listen: 127.0.0.1:0}
backend: {url: "http://127.0.0.1:9"}
routes:
  - {method: PUT, path: "/v1/items/{id}", resource: "item/{id}", status: {mode: registry}}
identity: {mode: insecure-header}
trust: {bundle: "`+bundle+`"}
registry: {url: "`+reg.URL+`"}
store: {backend: memory}
dataDir: "`+dir+`"
`)
	cfg, err := proxyserver.Check(path)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := proxyserver.New(cfg, zap.NewNop(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	defer func() { cancel(); <-done }()

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
