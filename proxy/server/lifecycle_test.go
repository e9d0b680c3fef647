package server

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"go.uber.org/zap"

	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/proxy"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/verify/verifytest"
)

// guardedStore is the real store, watched: it fails the test when Close
// runs while one of the background loops' calls is in flight, or when such
// a call comes after Close. The first ListUnknown (the reconcile loop's)
// blocks until its context ends, so that a loop is inside the store when
// Run is told to stop.
type guardedStore struct {
	store.Store
	t        *testing.T
	blocking chan struct{} // closed when the first ListUnknown blocks
	compacts chan struct{} // one value per Compact call (dropped when full)

	mu      sync.Mutex
	active  int
	closed  bool
	closes  int
	blocked bool
}

func (g *guardedStore) enter(name string) (leave func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		g.t.Errorf("store.%s called after Close", name)
	}
	g.active++
	return func() {
		g.mu.Lock()
		g.active--
		g.mu.Unlock()
	}
}

func (g *guardedStore) ListUnknown(ctx context.Context, now time.Time) ([]store.Mutation, error) {
	defer g.enter("ListUnknown")()
	g.mu.Lock()
	first := !g.blocked
	g.blocked = true
	g.mu.Unlock()
	if first {
		close(g.blocking)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return g.Store.ListUnknown(ctx, now)
}

func (g *guardedStore) ListPaused(ctx context.Context) ([]store.Record, error) {
	defer g.enter("ListPaused")()
	return g.Store.ListPaused(ctx)
}

func (g *guardedStore) Compact(ctx context.Context, in store.CompactInput) (store.CompactResult, error) {
	defer g.enter("Compact")()
	select {
	case g.compacts <- struct{}{}:
	default:
	}
	return g.Store.Compact(ctx, in)
}

func (g *guardedStore) Stats(ctx context.Context) (store.Stats, error) {
	defer g.enter("Stats")()
	return g.Store.Stats(ctx)
}

func (g *guardedStore) Close() error {
	g.mu.Lock()
	if g.active > 0 {
		g.t.Errorf("the store was closed while %d background-loop calls were in flight", g.active)
	}
	g.closed = true
	g.closes++
	g.mu.Unlock()
	return g.Store.Close()
}

// testConfig is a valid sidecar configuration over the memory store, with
// a fresh trust bundle, listening on loopback ports of the system's choice.
func testConfig(t *testing.T, backendURL string) Config {
	t.Helper()
	dir := t.TempDir()
	bundle := verifytest.BundleFile(t, verifytest.NewIssuer(t, jwa.EdDSA))
	return Config{
		Listen:   "127.0.0.1:0",
		Backend:  proxy.BackendConfig{URL: backendURL, Timeout: time.Minute},
		Routes:   []proxy.RouteConfig{{Method: "PUT", Path: "/v1/items/{id}", Resource: "item/{id}", Status: proxy.RouteStatus{Mode: proxy.StatusProof}}},
		Identity: identity.Config{Mode: identity.ModeInsecureHeader},
		Trust:    proxy.TrustConfig{Bundle: bundle},
		Store:    StoreConfig{Backend: "memory"},
		Admin:    AdminConfig{Listen: "127.0.0.1:0"},
		DataDir:  dir,
	}
}

// TestRunClosesTheStoreAfterTheLoops: Run stops the background loops and
// waits for them before it closes the store. The reconcile loop is held
// inside the store (a ListUnknown that returns only when its context
// ends) and the compaction loop runs every few milliseconds when Run is
// told to stop; the store must see neither a call in flight at Close nor
// a call after it, and be closed exactly once. (Before, Serve closed a
// stop channel and closed the store at once, under a reconcile pass that
// ran on context.Background().)
func TestRunClosesTheStoreAfterTheLoops(t *testing.T) {
	cfg := testConfig(t, "http://127.0.0.1:1")
	cfg.Reconcile.Interval = 2 * time.Millisecond
	cfg.Retention.Interval = 2 * time.Millisecond
	cfg.Trust.ReloadInterval = 2 * time.Millisecond
	g := &guardedStore{t: t, blocking: make(chan struct{}), compacts: make(chan struct{}, 1)}
	s, err := build(cfg, zap.NewNop(), nil, func(c Config, log *zap.Logger) (store.Store, error) {
		st, err := openStore(c, log)
		g.Store = st
		return g, err
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- s.Run(ctx) }()

	wait := func(what string, ch <-chan struct{}) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s never happened", what)
		}
	}
	wait("the reconcile loop's ListUnknown", g.blocking)
	for range 3 {
		wait("a compaction pass", g.compacts)
	}
	cancel()
	select {
	case err = <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closes != 1 {
		t.Fatalf("the store was closed %d times, want once", g.closes)
	}
	if g.active != 0 {
		t.Fatalf("%d store calls still in flight after Run returned", g.active)
	}
}
