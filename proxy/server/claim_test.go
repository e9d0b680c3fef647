package server

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/proxy"
	"github.com/fencegate/fencegate/registry/registrytest"
	"github.com/fencegate/fencegate/store/claim"
)

// startRegistry runs a real registry (header identities) over loopback
// and saves its JWKS; it returns the registry's URL and the bundle path.
func startRegistry(t *testing.T) (string, string) {
	t.Helper()
	srv, bundle := startRegistryServer(t)
	return srv.URL, bundle
}

// startRegistryServer is startRegistry returning the server, which a
// test may close early (closing it again at cleanup is harmless).
func startRegistryServer(t *testing.T) (*httptest.Server, string) {
	t.Helper()
	return registrytest.Serve(t)
}

// waitClaimHeld polls the health listener's /metrics until
// fencegate_proxy_store_claim_held is want.
func waitClaimHeld(t *testing.T, health string, want bool) {
	t.Helper()
	line := "fencegate_proxy_store_claim_held 0\n"
	if want {
		line = "fencegate_proxy_store_claim_held 1\n"
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + health + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(b), line) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the claim never became held=%v", want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// wantReady asserts /readyz answers 200 on each address.
func wantReady(t *testing.T, addrs ...string) {
	t.Helper()
	for _, a := range addrs {
		resp, err := http.Get("http://" + a + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("/readyz on %s: %d %s, want 200", a, resp.StatusCode, b)
		}
	}
}

// waitReady polls /readyz until its status is want (2xx or not).
func waitReady(t *testing.T, admin string, want bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + admin + "/readyz")
		if err == nil {
			resp.Body.Close()
			if (resp.StatusCode == http.StatusOK) == want {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz never became ready=%v", want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestLostClaimRefusesWrites (issue 10.3): a sidecar with a local bolt
// store whose claim on its service is released behind its back (and
// taken by another owner) refuses writes with STORE_UNAVAILABLE and
// forwards nothing, but stays ready (issue 13: the claim lives in the
// registry, and readiness must not follow the registry; the gauge
// fencegate_proxy_store_claim_held shows the loss); once the other owner
// lets go, it claims the service again and accepts writes.
func TestLostClaimRefusesWrites(t *testing.T) {
	var forwarded atomic.Int64
	back := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		forwarded.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	defer back.Close()
	regURL, bundle := startRegistry(t)
	dir := t.TempDir()
	cfg := Config{
		Listen:   "127.0.0.1:0",
		Backend:  proxy.BackendConfig{URL: back.URL, Timeout: 5 * time.Second},
		Routes:   []proxy.RouteConfig{{Method: "PUT", Path: "/v1/items/{id}", Resource: "item/{id}", Status: proxy.RouteStatus{Mode: proxy.StatusRegistry}}},
		Identity: identity.Config{Mode: identity.ModeInsecureHeader},
		Trust:    proxy.TrustConfig{Bundle: bundle},
		Registry: RegistryConfig{URL: regURL},
		Store:    StoreConfig{Backend: "bolt", Service: "claim-lost", ClaimTTL: 600 * time.Millisecond, ClaimIdentity: "sidecar-a"},
		Admin:    AdminConfig{Listen: "127.0.0.1:0"},
		DataDir:  dir,
	}
	s := serveUntilDone(t, cfg)
	waitReady(t, s.AdminAddr(), true)
	ctx := context.Background()

	worker, err := client.New(regURL, client.WithIdentityHeader(identity.DefaultHeader, "worker"))
	if err != nil {
		t.Fatal(err)
	}
	// One lease per write: each write is its lease's first segment.
	put := func(id, body string) error {
		h, err := worker.Hold(ctx, "item/"+id, client.WithTTL(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		defer h.Release(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+s.Addr()+"/v1/items/"+id, strings.NewReader(body))
		req.Header.Set(identity.DefaultHeader, "worker")
		resp, err := h.Transport().Client().Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		return client.ResponseError(resp) // the sidecar's refusal, typed
	}
	if err := put("1", "a"); err != nil || forwarded.Load() != 1 {
		t.Fatalf("a write while the claim is held: %v, forwarded %d", err, forwarded.Load())
	}

	// Behind the sidecar's back: release its claim at the registry and
	// let another owner take the service.
	owner, err := client.New(regURL, client.WithIdentityHeader(identity.DefaultHeader, "sidecar-a"))
	if err != nil {
		t.Fatal(err)
	}
	cs, ok := s.store.(*claim.Store)
	if !ok {
		t.Fatalf("the bolt store is not claimed: %T", s.store)
	}
	if _, err := owner.Release(ctx, cs.Claim().Holder().LeaseID()); err != nil {
		t.Fatal(err)
	}
	other, err := client.New(regURL, client.WithIdentityHeader(identity.DefaultHeader, "sidecar-b"))
	if err != nil {
		t.Fatal(err)
	}
	thief, err := other.Hold(ctx, cfg.Store.ClaimResource(), client.WithTTL(time.Minute), client.WithWait(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	waitClaimHeld(t, s.HealthAddr(), false)
	wantReady(t, s.AdminAddr(), s.HealthAddr())
	if err := put("2", "b"); !errors.Is(err, client.ErrStoreUnavailable) {
		t.Fatalf("a write after the claim was lost: %v, want STORE_UNAVAILABLE", err)
	}
	if n := forwarded.Load(); n != 1 {
		t.Fatalf("the backend saw %d writes, want only the one before the loss", n)
	}

	// The other owner lets go: the sidecar claims the service again.
	if err := thief.Release(ctx); err != nil {
		t.Fatal(err)
	}
	waitClaimHeld(t, s.HealthAddr(), true)
	if err := put("3", "c"); err != nil || forwarded.Load() != 2 {
		t.Fatalf("a write after the claim was taken again: %v, forwarded %d", err, forwarded.Load())
	}
}

// TestRunOwnsTheClaim: New claims the service without starting a
// goroutine of its own (the claim's loop is one of Run's), and Run
// releases the claim once the store closed: the next sidecar of the
// service (a restarted pod) starts at once instead of waiting up to one
// claim TTL; a sidecar whose New failed after claiming released it too.
func TestRunOwnsTheClaim(t *testing.T) {
	regURL, bundle := startRegistry(t)
	cfg := Config{
		Listen:   "127.0.0.1:0",
		Backend:  proxy.BackendConfig{URL: "http://127.0.0.1:1", Timeout: 5 * time.Second},
		Routes:   []proxy.RouteConfig{{Method: "PUT", Path: "/v1/items/{id}", Resource: "item/{id}", Status: proxy.RouteStatus{Mode: proxy.StatusRegistry}}},
		Identity: identity.Config{Mode: identity.ModeInsecureHeader},
		Trust:    proxy.TrustConfig{Bundle: bundle},
		Registry: RegistryConfig{URL: regURL},
		// A TTL far above the test's patience: a claim left behind would
		// make the next New wait for it.
		Store:   StoreConfig{Backend: "bolt", Service: "claim-run", ClaimTTL: time.Minute, Identity: "sidecar-a"},
		Admin:   AdminConfig{Listen: "127.0.0.1:0"},
		DataDir: t.TempDir(),
	}
	for i := range 2 {
		start := time.Now()
		s, err := New(cfg, zap.NewNop(), nil)
		if err != nil {
			t.Fatalf("sidecar %d: %v", i, err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("sidecar %d waited %v for the previous one's claim", i, d)
		}
		if s.claim == nil {
			t.Fatal("a bolt store without its claim")
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := s.Run(ctx); err != nil {
			t.Fatalf("Run: %v", err)
		}
	}
	// New fails after the claim (a listener address already taken): the
	// claim is released on the way out.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	bad := cfg
	bad.Admin.Listen = ln.Addr().String()
	if _, err := New(bad, zap.NewNop(), nil); err == nil {
		t.Fatal("New bound an address already in use")
	}
	start := time.Now()
	s, err := New(cfg, zap.NewNop(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("waited %v for the failed sidecar's claim", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = s.Run(ctx)
}

// TestDevelopmentRegistryNeedsNoStoreIdentity: a bolt-store sidecar
// without a client certificate, in front of a development registry
// (header identities), starts without store.identity: its claim and
// anchor calls go as store.service.
func TestDevelopmentRegistryNeedsNoStoreIdentity(t *testing.T) {
	regURL, bundle := startRegistry(t)
	cfg := Config{
		Listen:   "127.0.0.1:0",
		Backend:  proxy.BackendConfig{URL: "http://127.0.0.1:1", Timeout: 5 * time.Second},
		Routes:   []proxy.RouteConfig{{Method: "PUT", Path: "/v1/items/{id}", Resource: "item/{id}", Status: proxy.RouteStatus{Mode: proxy.StatusRegistry}}},
		Identity: identity.Config{Mode: identity.ModeInsecureHeader},
		Trust:    proxy.TrustConfig{Bundle: bundle},
		Registry: RegistryConfig{URL: regURL},
		Store:    StoreConfig{Backend: "bolt", Service: "dev-svc", ClaimTTL: time.Minute},
		Admin:    AdminConfig{Listen: "127.0.0.1:0"},
		DataDir:  t.TempDir(),
	}
	s, err := New(cfg, zap.NewNop(), nil)
	if err != nil {
		t.Fatalf("a sidecar without store.identity against a development registry: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	cfg.SetDefaults()
	if cfg.Store.Identity != "dev-svc" {
		t.Errorf("store.identity defaulted to %q, want the service", cfg.Store.Identity)
	}
	withCert := Config{Registry: RegistryConfig{CertFile: "client.pem"}, Store: StoreConfig{Service: "dev-svc"}}
	withCert.SetDefaults()
	if withCert.Store.Identity != "" {
		t.Errorf("with a client certificate store.identity defaulted to %q; the certificate is the caller", withCert.Store.Identity)
	}
}
