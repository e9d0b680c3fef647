package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate/client"

	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/proxy/adminapi"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/anchor"
	"github.com/fencegate/fencegate/store/storetest"
)

// Two sidecars configured with store.backend redis and the same server
// share one fenced store: a fence one of them accepted makes the other's
// older fence STALE_OWNER, and its mutation in flight makes a concurrent
// attempt BUSY.
func TestRedisStoreIsSharedBetweenSidecars(t *testing.T) {
	srv := redistest.Start(t, "--requirepass", "s3cret")
	pw := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(pw, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, "http://127.0.0.1:1")
	cfg.Store = StoreConfig{Backend: "redis", Service: "svc", Redis: RedisStoreConfig{Addr: srv.Addr(), PasswordFile: pw, Prefix: "svc"}}
	cfg.Registry.URL = "http://127.0.0.1:1" // not called: the stores are opened bare
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	open := func() store.Store {
		st, err := openStore(cfg, zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
	a, b := open(), open()
	ctx := context.Background()
	if res, err := a.Begin(ctx, storetest.Attempt("item/1", 2, 1, "p")); err != nil || res.Decision != store.DecisionProceed {
		t.Fatalf("sidecar a: %s %v", res.Decision, err)
	}
	if res, err := b.Begin(ctx, storetest.Attempt("item/1", 2, 1, "q")); err != nil || res.Decision != store.DecisionBusy {
		t.Fatalf("sidecar b, same segment while a's is in flight: %s %v; want BUSY", res.Decision, err)
	}
	if res, err := b.Begin(ctx, storetest.Attempt("item/1", 1, 1, "p")); err != nil || res.Decision != store.DecisionStaleOwner {
		t.Fatalf("sidecar b, older fence: %s %v; want STALE_OWNER", res.Decision, err)
	}
}

// A sidecar whose redis store does not answer does not start.
func TestRedisStoreUnreachableFailsStart(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	cfg := testConfig(t, "http://127.0.0.1:1")
	cfg.Store = StoreConfig{Backend: "redis", Redis: RedisStoreConfig{Addr: addr}}
	st, err := openStore(cfg, zap.NewNop())
	if err == nil {
		st.Close()
		t.Fatal("opened a redis store with no server")
	}
	if !strings.Contains(err.Error(), "store/redis") {
		t.Fatalf("error %v does not name the redis store", err)
	}
}

// A sidecar does not start on a Redis store that keeps nothing on disk
// unless store.redis.allowNonDurable says so.
func TestRedisStoreNonDurableRefusedUnlessAllowed(t *testing.T) {
	srv := redistest.Start(t, "--appendonly", "no")
	cfg := testConfig(t, "http://127.0.0.1:1")
	cfg.Store = StoreConfig{Backend: "redis", Redis: RedisStoreConfig{Addr: srv.Addr()}}
	st, err := openStore(cfg, zap.NewNop())
	if err == nil {
		st.Close()
		t.Fatal("opened a redis store on appendonly no")
	}
	if !strings.Contains(err.Error(), "appendonly no") || !strings.Contains(err.Error(), "allowNonDurable") {
		t.Fatalf("refusal %q does not name the setting and the key that allows it", err)
	}
	cfg.Store.Redis.AllowNonDurable = true
	st, err = openStore(cfg, zap.NewNop())
	if err != nil {
		t.Fatalf("store.redis.allowNonDurable: %v", err)
	}
	st.Close()
}

// TestRedisLossAcknowledgedAtTheRegistry drives a Redis data loss over
// the real admin listener and a real registry: after Redis restarted empty
// the sidecar refuses writes, is not ready and reports the loss (1 in
// fencegate_proxy_store_data_lost); POST /v1/store/acknowledge-loss no
// longer acknowledges on one sidecar but answers STORE_LOST with the one
// command that acknowledges at the registry; once an admin acknowledged
// there, the sidecar's recheck repairs the store and it is ready again.
func TestRedisLossAcknowledgedAtTheRegistry(t *testing.T) {
	anchorRecheckInterval = 20 * time.Millisecond
	t.Cleanup(func() { anchorRecheckInterval = anchor.DefaultRecheckInterval })
	srv := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	regURL, bundle := startRegistry(t)
	cfg := testConfig(t, "http://127.0.0.1:1")
	cfg.Trust.Bundle = bundle
	cfg.Registry.URL = regURL
	cfg.Store = StoreConfig{Backend: "redis", Service: "ack", Identity: "sidecar", Redis: RedisStoreConfig{Addr: srv.Addr(), Prefix: "ack"}}
	cfg.Trust.ReloadInterval = 20 * time.Millisecond
	cfg.SetDefaults()
	s, err := New(cfg, zap.NewNop(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	admin := "http://" + s.AdminAddr()
	get := func(path string) (int, string) {
		resp, err := http.Get(admin + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if st, body := get("/readyz"); st != 200 {
		t.Fatalf("/readyz before the loss: %d %s", st, body)
	}
	bctx := context.Background()
	if res, err := s.store.Begin(bctx, storetest.Attempt("item/1", 5, 1, "p")); err != nil || res.Decision != store.DecisionProceed {
		t.Fatalf("before the loss: %s %v", res.Decision, err)
	}
	srv.Kill()
	entries, _ := os.ReadDir(srv.Dir())
	for _, e := range entries {
		if e.Name() != "redis.log" {
			_ = os.RemoveAll(filepath.Join(srv.Dir(), e.Name()))
		}
	}
	srv.Restart()
	if res, err := s.store.Begin(bctx, storetest.Attempt("item/1", 3, 1, "q")); err == nil {
		t.Fatalf("a write accepted after Redis lost its data: %s", res.Decision)
	}
	if st, body := get("/readyz"); st != 503 || !strings.Contains(body, "STORE_UNAVAILABLE") {
		t.Fatalf("/readyz after Redis restarted empty: %d %s", st, body)
	}
	waitFor(t, "the sidecar reports the store lost", func() bool {
		_, body := get("/v1/store")
		return strings.Contains(body, `"lost": true`) && strings.Contains(body, `"presented"`)
	})
	if _, body := get("/metrics"); !strings.Contains(body, "fencegate_proxy_store_data_lost 1") {
		t.Fatal("fencegate_proxy_store_data_lost is not 1 after the loss")
	}
	// The emptied Redis lost the trust pins too: the next reload finds
	// none, and trust on first use must not pin whatever the bundle file
	// holds now from a store that lost its data.
	pinned := func(n int) func() bool {
		return func() bool {
			_, body := get("/metrics")
			return strings.Contains(body, fmt.Sprintf(`fencegate_proxy_trust_keys{state="pinned"} %d`, n))
		}
	}
	waitFor(t, "no key trusted while the store is lost", pinned(0))
	resp, err := http.Post(admin+"/v1/store/acknowledge-loss", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var st adminapi.StoreStatus
	_, body := get("/v1/store")
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 409 || !strings.Contains(string(b), "STORE_LOST") || !strings.Contains(string(b), "fencegate store acknowledge-loss --registry "+regURL) ||
		!strings.Contains(st.Acknowledge, "--store ack --generation "+st.Presented) {
		t.Fatalf("acknowledge on the sidecar: %d %s; status %+v", resp.StatusCode, b, st)
	}
	rc, err := client.New(regURL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rc.AcknowledgeStoreLoss(bctx, "ack", st.Presented); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "ready again after the acknowledgement", func() bool { code, _ := get("/readyz"); return code == 200 })
	waitFor(t, "the bundle pinned on first use once the loss is acknowledged", pinned(1))
	if _, body := get("/metrics"); !strings.Contains(body, "fencegate_proxy_store_data_lost 0") {
		t.Fatal("fencegate_proxy_store_data_lost is not back to 0")
	}
	// The repair put the anchored mutation back: the stale fence is refused.
	if res, err := s.store.Begin(bctx, storetest.Attempt("item/1", 3, 1, "q")); err != nil || res.Decision == store.DecisionProceed {
		t.Fatalf("fence 3 after the repair: %s %v", res.Decision, err)
	}
}

// waitFor polls cond until it holds, for at most a minute (a loop that
// never gets there fails here, not at the suite's deadline).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if t.Context().Err() != nil || time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
