package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/proxy"
)

// TestReadyWhileRegistryDown (issue 13): with the registry stopped, a
// sidecar (bolt store claimed at the registry, a route in registry status
// mode) stays ready on both listeners, even once its claim has lapsed;
// reads still reach the backend, while a protected write with a grant the
// registry issued before it stopped fails closed with
// REGISTRY_UNAVAILABLE and reaches nothing; the failed status read is
// counted in fencegate_proxy_registry_requests_total{result="error"}.
func TestReadyWhileRegistryDown(t *testing.T) {
	var reads, writes atomic.Int64
	back := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			reads.Add(1)
		} else {
			writes.Add(1)
		}
		_, _ = io.WriteString(w, "ok")
	}))
	defer back.Close()
	regSrv, bundle := startRegistryServer(t)
	cfg := Config{
		Listen:   "127.0.0.1:0",
		Backend:  proxy.BackendConfig{URL: back.URL, Timeout: 5 * time.Second},
		Routes:   []proxy.RouteConfig{{Method: "PUT", Path: "/v1/items/{id}", Resource: "item/{id}", Status: proxy.RouteStatus{Mode: proxy.StatusRegistry}}},
		Identity: identity.Config{Mode: identity.ModeInsecureHeader},
		Trust:    proxy.TrustConfig{Bundle: bundle},
		Registry: RegistryConfig{URL: regSrv.URL, Timeout: 500 * time.Millisecond},
		Store:    StoreConfig{Backend: "bolt", Service: "ready-outage", ClaimTTL: 600 * time.Millisecond, ClaimIdentity: "sidecar-a"},
		Admin:    AdminConfig{Listen: "127.0.0.1:0"},
		Health:   HealthConfig{Listen: "127.0.0.1:0"},
		DataDir:  t.TempDir(),
	}
	s := serveUntilDone(t, cfg)
	ctx := context.Background()
	waitReady(t, s.HealthAddr(), true)
	waitClaimHeld(t, s.HealthAddr(), true)

	worker, err := client.New(regSrv.URL, client.WithIdentityHeader(identity.DefaultHeader, "worker"))
	if err != nil {
		t.Fatal(err)
	}
	send := func(method, path string, l *client.Lease) (int, fencegate.Code) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+s.Addr()+path, strings.NewReader("body"))
		req.Header.Set(identity.DefaultHeader, "worker")
		if l != nil {
			req.Header.Set(fencegate.HeaderGrant, l.Grant)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode < 400 {
			return resp.StatusCode, ""
		}
		p, err := fencegate.ReadProblem(resp)
		if err != nil {
			t.Fatalf("%s %s: %d, not a problem: %v", method, path, resp.StatusCode, err)
		}
		return resp.StatusCode, p.Code
	}
	l1, err := worker.Acquire(ctx, client.AcquireRequest{Resource: "item/1", RequestID: "r1", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	l2, err := worker.Acquire(ctx, client.AcquireRequest{Resource: "item/2", RequestID: "r2", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if st, code := send("PUT", "/v1/items/1", l1); st != 200 || writes.Load() != 1 {
		t.Fatalf("a write with the registry up: %d %s, backend writes %d", st, code, writes.Load())
	}

	regSrv.Close() // the registry is down from here on
	waitClaimHeld(t, s.HealthAddr(), false)
	wantReady(t, s.HealthAddr(), s.AdminAddr())

	if st, _ := send("GET", "/v1/items/1", nil); st != 200 || reads.Load() != 1 {
		t.Fatalf("a read with the registry down: %d, backend reads %d", st, reads.Load())
	}
	if st, code := send("PUT", "/v1/items/2", l2); st != 503 || code != fencegate.CodeRegistryUnavailable {
		t.Fatalf("a write with the registry down: %d %s, want 503 REGISTRY_UNAVAILABLE", st, code)
	}
	if n := writes.Load(); n != 1 {
		t.Fatalf("the backend saw %d writes, want only the one before the outage", n)
	}
	wantReady(t, s.HealthAddr(), s.AdminAddr())

	resp, err := http.Get("http://" + s.HealthAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`fencegate_proxy_registry_requests_total{result="ok"} 1`,
		`fencegate_proxy_registry_requests_total{result="error"} 1`,
		`fencegate_proxy_registry_requests_total{result="not_found"} 0`,
		`fencegate_proxy_store_claim_held 0`,
		`fencegate_proxy_mutations_total{code="REGISTRY_UNAVAILABLE",decision="rejected",mode="enforce",route="PUT /v1/items/{id}"} 1`,
		`fencegate_build_info{component="proxy",`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// serveUntilDone builds a sidecar from cfg and runs it until the test ends
// (Run must then return nil).
func serveUntilDone(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg, zap.NewNop(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return s
}
