package proxy_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/lestrrat-go/jwx/v2/jwa"

	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/proxy"
	storemem "github.com/fencegate/fencegate/store/memory"
	"github.com/fencegate/fencegate/verify/verifytest"
)

// validConfig is a pipeline configuration Validate accepts (defaults
// filled). The file's (proxy/server.Config) has its own.
func validConfig(t *testing.T) proxy.Config {
	c := proxy.Config{
		Backend:  proxy.BackendConfig{URL: "http://127.0.0.1:8080"},
		Routes:   []proxy.RouteConfig{{Method: "PUT", Path: "/v1/items/{id}", Resource: "item/{id}", Status: proxy.RouteStatus{Mode: proxy.StatusProof}}},
		Identity: identity.Config{Mode: identity.ModeInsecureHeader},
		Trust:    proxy.TrustConfig{Bundle: filepath.Join(t.TempDir(), "jwks.json")},
	}
	c.SetDefaults()
	if err := c.Validate(); err != nil {
		t.Fatalf("the base configuration does not validate: %v", err)
	}
	return c
}

// TestValidateIsPure: Validate accepts a route with an extension method
// without making it known to chi (its table is process-wide); New does,
// when it builds the router.
func TestValidateIsPure(t *testing.T) {
	const method = "FENCEGATEVALIDATEPURE"
	known := func() (ok bool) {
		defer func() { ok = recover() == nil }()
		chi.NewRouter().Method(method, "/", http.NotFoundHandler())
		return true
	}
	c := validConfig(t)
	c.Trust.Bundle = verifytest.BundleFile(t, verifytest.NewIssuer(t, jwa.EdDSA))
	c.Routes[0].Method = method
	if err := c.Validate(); err != nil {
		t.Fatalf("an extension method refused: %v", err)
	}
	if known() {
		t.Fatalf("Validate registered %s with chi", method)
	}
	p, err := proxy.New(proxy.Options{Config: c, Store: storemem.New(storemem.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = p.Run(ctx)
	if !known() {
		t.Fatalf("New did not register %s with chi", method)
	}
}

// TestNegativeReconcileIntervalRefusedAtStart (issue 8.13): the sidecar
// refuses the configuration instead of panicking in its reconcile loop.
func TestNegativeReconcileIntervalRefusedAtStart(t *testing.T) {
	c := validConfig(t)
	c.Reconcile.Interval = -time.Second
	p, err := proxy.New(proxy.Options{Config: c, Store: storemem.New(storemem.Options{})})
	if err == nil {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = p.Run(ctx)
		t.Fatal("a negative reconcile interval was accepted")
	}
	if !strings.Contains(err.Error(), "reconcile.interval") {
		t.Fatalf("error does not name reconcile.interval: %v", err)
	}
}
