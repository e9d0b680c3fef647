package anchor_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/registry"
	regmemory "github.com/fencegate/fencegate/registry/memory"
	"github.com/fencegate/fencegate/registry/registrytest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/anchor"
	"github.com/fencegate/fencegate/store/bolt"
	"github.com/fencegate/fencegate/store/memory"
	storeredis "github.com/fencegate/fencegate/store/redis"
	"github.com/fencegate/fencegate/store/storetest"
)

const (
	storeName = "billing"
	caller    = "spiffe://test/sidecar"
)

// newRegistry is a real registry on its memory backend.
func newRegistry(t testing.TB) *registry.Registry {
	t.Helper()
	reg, err := registry.New(registry.Options{Backend: regmemory.NewBackend(), Signer: registrytest.NewKeys(t).Signer, Metrics: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	registrytest.Start(t, reg)
	return reg
}

// backend is a real store whose data can be snapshotted, restored and
// wiped between opens (the store closed).
type backend interface {
	Name() string
	Open(t testing.TB) store.Store
	Snapshot(t testing.TB) string
	Restore(t testing.TB, snap string)
	Wipe(t testing.TB)
}

type boltBackend struct{ path string }

func newBolt(t testing.TB) *boltBackend {
	return &boltBackend{path: filepath.Join(t.TempDir(), "store.db")}
}

func (b *boltBackend) Name() string { return "bolt" }
func (b *boltBackend) Open(t testing.TB) store.Store {
	t.Helper()
	st, err := bolt.Open(b.path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}
func (b *boltBackend) Snapshot(t testing.TB) string {
	t.Helper()
	snap := filepath.Join(t.TempDir(), "snap.db")
	copyFile(t, b.path, snap)
	return snap
}
func (b *boltBackend) Restore(t testing.TB, snap string) { t.Helper(); copyFile(t, snap, b.path) }
func (b *boltBackend) Wipe(t testing.TB) {
	t.Helper()
	if err := os.Remove(b.path); err != nil {
		t.Fatal(err)
	}
}

type redisBackend struct {
	srv   *redistest.Server
	snaps map[string]*redistest.Snapshot
}

func newRedis(t testing.TB) *redisBackend {
	return &redisBackend{srv: redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")}
}

func (r *redisBackend) Name() string { return "redis" }
func (r *redisBackend) Open(t testing.TB) store.Store {
	t.Helper()
	st, err := storeredis.Open(context.Background(), storeredis.Options{Addr: r.srv.Addr(), CallerClock: true})
	if err != nil {
		t.Fatal(err)
	}
	return st
}
func (r *redisBackend) Snapshot(t testing.TB) string {
	t.Helper()
	if r.snaps == nil {
		r.snaps = map[string]*redistest.Snapshot{}
	}
	key := strconv.Itoa(len(r.snaps))
	r.snaps[key] = r.srv.Snapshot()
	return key
}
func (r *redisBackend) Restore(t testing.TB, snap string) {
	t.Helper()
	r.srv.RestoreSnapshot(r.snaps[snap])
}
func (r *redisBackend) Wipe(t testing.TB) { t.Helper(); r.srv.Wipe() }

// backends are the stores with data that can be restored: bolt,
// postgres (the machine's PostgreSQL; pgtest fails the test when it does
// not answer), and redis when a redis-server is installed.
func backends(t *testing.T) []backend {
	out := []backend{newBolt(t), newPostgres(t)}
	if _, err := redistest.Binary(); err == nil {
		out = append(out, newRedis(t))
	} else {
		t.Log("redis-server not installed: the redis backend is skipped")
	}
	return out
}

// wrapped is a store wrapped and opened against reg.
func wrapped(t testing.TB, inner store.Store, reg anchor.Registry, opts anchor.Options) *anchor.Store {
	t.Helper()
	if opts.Store == "" {
		opts.Store = storeName
	}
	if opts.Metrics == nil {
		opts.Metrics = prometheus.NewRegistry()
	}
	w, err := anchor.Wrap(inner, reg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	return w
}

// trace is one ordered log of what the store and the registry were asked.
type trace struct {
	mu  sync.Mutex
	ops []string
}

func (tr *trace) add(op string) {
	tr.mu.Lock()
	tr.ops = append(tr.ops, op)
	tr.mu.Unlock()
}

func (tr *trace) take() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	out := tr.ops
	tr.ops = nil
	return out
}

// tracedStore records the store writes the wrapper makes.
type tracedStore struct {
	store.Store
	tr *trace
}

func (s tracedStore) Abort(ctx context.Context, in store.AbortInput) (store.Record, error) {
	s.tr.add("store:Abort")
	return s.Store.Abort(ctx, in)
}
func (s tracedStore) Resolve(ctx context.Context, in store.ResolveInput) (store.ResolveResult, error) {
	s.tr.add("store:Resolve")
	return s.Store.Resolve(ctx, in)
}
func (s tracedStore) Resume(ctx context.Context, r string) (store.Record, error) {
	s.tr.add("store:Resume")
	return s.Store.Resume(ctx, r)
}
func (s tracedStore) Pause(ctx context.Context, in store.PauseInput) (store.Record, error) {
	s.tr.add("store:Pause")
	return s.Store.Pause(ctx, in)
}
func (s tracedStore) Repair(ctx context.Context, in store.RepairInput) (store.Record, error) {
	s.tr.add("store:Repair")
	return s.Store.Repair(ctx, in)
}
func (s tracedStore) RecordEnforcement(ctx context.Context, in store.EnforcementInput) (store.Enforcement, error) {
	s.tr.add("store:" + in.Kind)
	return s.Store.RecordEnforcement(ctx, in)
}

// faulty is the real registry behind a switch that fails calls on demand:
// "drop" fails an anchor call without sending it (not applied), "lose"
// sends it and fails anyway (applied, its answer lost). Every anchor
// step and ledger event is traced.
type faulty struct {
	reg anchor.Registry
	tr  *trace

	mu       sync.Mutex
	faults   []string // consumed one per anchor call ("" passes)
	ledgerOK bool
	inFlight int
	maxIn    int
	calls    int
	// before, when set, runs before each anchor call is sent.
	before func(fencegate.AnchorRequest)
}

func newFaulty(reg anchor.Registry, tr *trace) *faulty {
	return &faulty{reg: reg, tr: tr, ledgerOK: true}
}

func (f *faulty) fail(modes ...string) {
	f.mu.Lock()
	f.faults = append(f.faults, modes...)
	f.mu.Unlock()
}

var errInjected = errors.New("injected registry failure")

func (f *faulty) RegisterStore(ctx context.Context, s, g string) (fencegate.StoreAnchor, bool, error) {
	return f.reg.RegisterStore(ctx, s, g)
}
func (f *faulty) StoreAnchor(ctx context.Context, s string) (fencegate.StoreAnchor, error) {
	return f.reg.StoreAnchor(ctx, s)
}
func (f *faulty) StoreAnchors(ctx context.Context, s, after string, limit int) (fencegate.AnchorPage, error) {
	return f.reg.StoreAnchors(ctx, s, after, limit)
}
func (f *faulty) RecordLedger(ctx context.Context, s string, ev fencegate.LedgerBody) (fencegate.StoreAnchor, error) {
	f.tr.add("reg:" + ev.Kind)
	f.mu.Lock()
	ok := f.ledgerOK
	f.mu.Unlock()
	if !ok {
		return fencegate.StoreAnchor{}, errInjected
	}
	return f.reg.RecordLedger(ctx, s, ev)
}
func (f *faulty) AnchorProgress(ctx context.Context, s string, req fencegate.AnchorRequest) (fencegate.AnchorResponse, error) {
	ops := make([]string, len(req.Items))
	for i, it := range req.Items {
		ops[i] = string(it.Op)
	}
	f.mu.Lock()
	mode := ""
	if len(f.faults) > 0 {
		mode, f.faults = f.faults[0], f.faults[1:]
	}
	f.inFlight++
	f.calls++
	f.maxIn = max(f.maxIn, f.inFlight)
	before := f.before
	f.mu.Unlock()
	if before != nil {
		before(req)
	}
	defer func() { f.mu.Lock(); f.inFlight--; f.mu.Unlock() }()
	f.tr.add("reg:" + strings.Join(ops, ",") + suffix(mode))
	if mode == "drop" {
		return fencegate.AnchorResponse{}, errInjected
	}
	resp, err := f.reg.AnchorProgress(ctx, s, req)
	if mode == "lose" {
		return fencegate.AnchorResponse{}, errInjected
	}
	return resp, err
}

func suffix(mode string) string {
	if mode == "" {
		return ""
	}
	return "(" + mode + ")"
}

// anchoredOf reads the registry's anchor of one resource.
func anchoredOf(t testing.TB, reg anchor.Registry, resource string) fencegate.Progress {
	t.Helper()
	after := ""
	for {
		page, err := reg.StoreAnchors(context.Background(), storeName, after, fencegate.MaxAnchorPage)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range page.Anchors {
			if a.Resource == resource {
				return a.Anchored
			}
		}
		if page.Next == "" {
			return fencegate.Progress{}
		}
		after = page.Next
	}
}

// attempt is a Begin of resource at fence, segment seq, payload p, now.
func attempt(resource string, fence, seq uint64, p string) store.BeginInput {
	in := storetest.Attempt(resource, fence, seq, p)
	in.Now = time.Now()
	in.Deadline = in.Now.Add(time.Minute)
	in.QuietAt = in.Now.Add(2 * time.Minute)
	return in
}

func commit(t testing.TB, st store.Store, ref store.OpRef) {
	t.Helper()
	in := storetest.Answer(ref)
	in.Now = time.Now()
	if _, err := st.Commit(context.Background(), in); err != nil {
		t.Fatal(err)
	}
}

func mustProceed(t testing.TB, st store.Store, in store.BeginInput) store.BeginResult {
	t.Helper()
	res, err := st.Begin(context.Background(), in)
	if err != nil || res.Decision != store.DecisionProceed {
		t.Fatalf("begin %s: %v %s %s", in.Ref().OperationID(), err, res.Decision, res.Detail)
	}
	return res
}

func copyFile(t testing.TB, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

var _ = memory.New
