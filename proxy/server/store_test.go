package server

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/proxy"
	"github.com/fencegate/fencegate/proxy/adminapi"
	"github.com/fencegate/fencegate/store"
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
	cfg.Store = proxy.StoreConfig{Backend: "redis", Redis: proxy.RedisStoreConfig{Addr: srv.Addr(), PasswordFile: pw, Prefix: "svc"}}
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
	cfg.Store = proxy.StoreConfig{Backend: "redis", Redis: proxy.RedisStoreConfig{Addr: addr}}
	st, err := openStore(cfg, zap.NewNop())
	if err == nil {
		st.Close()
		t.Fatal("opened a redis store with no server")
	}
	if !strings.Contains(err.Error(), "store/redis") {
		t.Fatalf("error %v does not name the redis store", err)
	}
}

// TestRedisDataLossIsVisible: a Redis that restarted empty is seen by the
// sidecar's store (every write refused) and found through the guard, which
// is what /readyz and fencegate_proxy_store_data_lost report.
func TestRedisDataLossIsVisible(t *testing.T) {
	srv := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	cfg := testConfig(t, "http://127.0.0.1:1")
	cfg.Store = proxy.StoreConfig{Backend: "redis", Redis: proxy.RedisStoreConfig{Addr: srv.Addr(), Prefix: "svc"}}
	cfg.SetDefaults()
	st, err := openStore(cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	lc := lossChecker(st)
	if lc == nil {
		t.Fatal("the redis store is not found under the guard")
	}
	ctx := context.Background()
	if res, err := st.Begin(ctx, storetest.Attempt("item/1", 5, 1, "p")); err != nil || res.Decision != store.DecisionProceed {
		t.Fatalf("before the loss: %s %v", res.Decision, err)
	}
	if lc.GenerationLoss() != nil {
		t.Fatalf("loss reported before any: %v", lc.GenerationLoss())
	}
	srv.Kill()
	entries, _ := os.ReadDir(srv.Dir())
	for _, e := range entries {
		if e.Name() != "redis.log" {
			_ = os.RemoveAll(filepath.Join(srv.Dir(), e.Name()))
		}
	}
	srv.Restart()
	if res, err := st.Begin(ctx, storetest.Attempt("item/1", 3, 1, "q")); err == nil {
		t.Fatalf("a write accepted after Redis lost its data: %s", res.Decision)
	}
	if lc.GenerationLoss() == nil {
		t.Fatal("the loss is not reported")
	}
}

// TestAcknowledgeRedisLoss drives the operator's acknowledgement over the
// real admin listener: after Redis restarted empty the sidecar is not
// ready and reports the loss; POST /v1/store/acknowledge-loss adopts the
// new data set, and it is ready again.
func TestAcknowledgeRedisLoss(t *testing.T) {
	srv := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	cfg := testConfig(t, "http://127.0.0.1:1")
	cfg.Store = proxy.StoreConfig{Backend: "redis", Redis: proxy.RedisStoreConfig{Addr: srv.Addr(), Prefix: "ack"}}
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
	srv.Kill()
	entries, _ := os.ReadDir(srv.Dir())
	for _, e := range entries {
		if e.Name() != "redis.log" {
			_ = os.RemoveAll(filepath.Join(srv.Dir(), e.Name()))
		}
	}
	srv.Restart()
	if st, body := get("/readyz"); st != 503 || !strings.Contains(body, "STORE_UNAVAILABLE") {
		t.Fatalf("/readyz after Redis restarted empty: %d %s", st, body)
	}
	if _, body := get("/metrics"); !strings.Contains(body, "fencegate_proxy_store_data_lost 1") {
		t.Fatal("fencegate_proxy_store_data_lost is not 1 after the loss")
	}
	resp, err := http.Post(admin+"/v1/store/acknowledge-loss", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var ack adminapi.StoreLossAnswer
	if resp.StatusCode != 200 || json.Unmarshal(b, &ack) != nil || !strings.Contains(ack.Acknowledged, "marker missing") || ack.Generation == "" {
		t.Fatalf("acknowledge: %d %s", resp.StatusCode, b)
	}
	if st, body := get("/readyz"); st != 200 {
		t.Fatalf("/readyz after the acknowledgement: %d %s", st, body)
	}
	if _, body := get("/metrics"); !strings.Contains(body, "fencegate_proxy_store_data_lost 0") {
		t.Fatal("fencegate_proxy_store_data_lost is not back to 0")
	}
}
