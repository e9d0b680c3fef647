package anchor_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/anchor"
	"github.com/fencegate/fencegate/store/memory"
)

// switchable is one registry address whose data set an operator replaces.
type switchable struct {
	mu  sync.Mutex
	cur anchor.Registry
}

func (s *switchable) get() anchor.Registry  { s.mu.Lock(); defer s.mu.Unlock(); return s.cur }
func (s *switchable) set(r anchor.Registry) { s.mu.Lock(); s.cur = r; s.mu.Unlock() }

func (s *switchable) RegisterStore(ctx context.Context, st, g string) (fencegate.StoreAnchor, bool, error) {
	return s.get().RegisterStore(ctx, st, g)
}
func (s *switchable) StoreAnchor(ctx context.Context, st string) (fencegate.StoreAnchor, error) {
	return s.get().StoreAnchor(ctx, st)
}
func (s *switchable) AnchorProgress(ctx context.Context, st string, req fencegate.AnchorRequest) (fencegate.AnchorResponse, error) {
	return s.get().AnchorProgress(ctx, st, req)
}
func (s *switchable) RecordLedger(ctx context.Context, st string, ev fencegate.LedgerBody) (fencegate.StoreAnchor, error) {
	return s.get().RecordLedger(ctx, st, ev)
}
func (s *switchable) StoreAnchors(ctx context.Context, st, after string, limit int) (fencegate.AnchorPage, error) {
	return s.get().StoreAnchors(ctx, st, after, limit)
}

// A store registered at a registry that holds no generation of it seeds
// it: every record (more than one page) and the ledger. When the registry
// is replaced (a new data set at the same address), the next anchor step
// finds the store unknown: writes are refused until the store is
// registered and seeded again, so the new registry continues from the
// store's progress.
func TestSeedAndReplacedRegistry(t *testing.T) {
	ctx := context.Background()
	inner := memory.New(memory.Options{})
	const n = fencegate.MaxAnchorBatch + 3
	for i := range n {
		in := attempt(fmt.Sprintf("acct/%04d", i), uint64(i%7+1), 1, "p")
		if _, err := inner.Begin(ctx, in); err != nil {
			t.Fatal(err)
		}
		commit(t, inner, in.Ref())
	}
	if _, err := inner.RecordEnforcement(ctx, store.EnforcementInput{Shape: "PUT /v1/x/{}", Kind: store.EnforcementEnforce, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	sw := &switchable{cur: anchor.FromRegistry(newRegistry(t), caller)}
	st := wrapped(t, inner, sw, anchor.Options{})
	defer st.Close()
	check := func(when string) {
		t.Helper()
		for _, i := range []int{0, fencegate.MaxAnchorBatch, n - 1} {
			r := fmt.Sprintf("acct/%04d", i)
			rec, _ := inner.Record(ctx, r)
			if a := anchoredOf(t, sw, r); a.Fence != rec.HighestFence || a.LastSeq != 1 {
				t.Fatalf("%s: anchor of %s %+v, record fence %d", when, r, a, rec.HighestFence)
			}
		}
		v, err := sw.StoreAnchor(ctx, storeName)
		if err != nil || len(v.Ledger) != 1 || v.Ledger[0].EnforcedSince == 0 || v.Resources < n {
			t.Fatalf("%s: registry's store %+v, %v", when, v, err)
		}
	}
	check("first registration")

	sw.set(anchor.FromRegistry(newRegistry(t), caller)) // the registry replaced
	if _, err := st.Begin(ctx, attempt("acct/new", 9, 1, "q")); !errors.Is(err, anchor.ErrNotAnchored) {
		t.Fatalf("begin at the replaced registry: %v", err)
	}
	if _, err := st.Begin(ctx, attempt("acct/new2", 1, 1, "q")); !errors.Is(err, anchor.ErrNotAnchored) {
		t.Fatalf("begin before the re-seed: %v", err)
	}
	if rec, _ := inner.Record(ctx, "acct/new2"); rec.InFlight != nil {
		t.Fatalf("a Begin before the re-seed left its marker: %+v", rec.InFlight)
	}
	// A decision that forwards nothing is answered meanwhile.
	if res, err := st.Begin(ctx, attempt("acct/new", 1, 1, "q")); err != nil || res.Decision != store.DecisionStaleOwner {
		t.Fatalf("a stale fence before the re-seed: %v %s", err, res.Decision)
	}
	if err := st.Recheck(ctx); err != nil {
		t.Fatal(err)
	}
	check("re-seeded")
	mustProceed(t, st, attempt("acct/0000", 9, 1, "q"))
}

// A SEED answered LOSS because another replica's Begin moved the anchor
// meanwhile is no loss when the record read again covers the anchor; one
// the record does not cover is a loss, repaired.
func TestSeedLoss(t *testing.T) {
	ctx := context.Background()
	tr := &trace{}
	real := anchor.FromRegistry(newRegistry(t), caller)
	sw := &switchable{cur: real}
	inner := memory.New(memory.Options{})
	for _, r := range []string{"acct/moved", "acct/lost"} {
		in := attempt(r, 2, 1, "old")
		if _, err := inner.Begin(ctx, in); err != nil {
			t.Fatal(err)
		}
		commit(t, inner, in.Ref())
	}
	st := wrapped(t, inner, sw, anchor.Options{})
	defer st.Close()
	gen, _ := inner.Generation(ctx)

	// The registry is replaced by one where another sidecar registered this
	// store and anchored acct/lost at fence 4 (which this store lost).
	fresh := newFaulty(anchor.FromRegistry(newRegistry(t), caller), tr)
	if _, _, err := fresh.RegisterStore(ctx, storeName, gen); err != nil {
		t.Fatal(err)
	}
	lost := attempt("acct/lost", 4, 1, "gone")
	lostNext := store.ProgressOf(store.Record{Resource: "acct/lost", HighestFence: 4, Root: lost.Root, Lease: lost.Lease, GrantDigest: lost.GrantDigest,
		Evidence: lost.Evidence, InFlight: &store.Mutation{OpRef: lost.Ref(), PayloadDigest: lost.PayloadDigest, Owner: lost.Owner}})
	if r, err := fresh.AnchorProgress(ctx, storeName, fencegate.AnchorRequest{Generation: gen, Items: []fencegate.AnchorItem{
		{Resource: "acct/lost", Op: fencegate.AnchorSeed, Next: lostNext}}}); err != nil || r.Results[0].Outcome != fencegate.AnchorAnchored {
		t.Fatalf("seed: %+v, %v", r, err)
	}
	// While this sidecar seeds, another replica of the shared store begins
	// acct/moved at fence 3 and anchors it: this seed's record of it is old.
	var once sync.Once
	fresh.before = func(req fencegate.AnchorRequest) {
		if req.Items[0].Op != fencegate.AnchorSeed {
			return
		}
		once.Do(func() {
			in := attempt("acct/moved", 3, 1, "concurrent")
			res, err := inner.Begin(ctx, in)
			if err != nil {
				t.Error(err)
				return
			}
			if r, err := fresh.reg.AnchorProgress(ctx, storeName, fencegate.AnchorRequest{Generation: gen, Items: []fencegate.AnchorItem{
				{Resource: "acct/moved", Op: fencegate.AnchorBegin, Prior: store.ProgressOf(res.Prior), Next: store.ProgressOf(res.Record)}}}); err != nil ||
				r.Results[0].Outcome != fencegate.AnchorAnchored {
				t.Errorf("concurrent begin: %+v, %v", r, err)
			}
		})
	}
	sw.set(fresh)
	// The new registry knows the store: the step is anchored there, and
	// its answer's lineage shows the registry was replaced.
	mustProceed(t, st, attempt("acct/other", 1, 1, "x"))
	if _, err := st.Begin(ctx, attempt("acct/other2", 1, 1, "x")); !errors.Is(err, anchor.ErrNotAnchored) {
		t.Fatalf("begin before the re-seed: %v", err)
	}
	if err := st.Recheck(ctx); err != nil {
		t.Fatal(err)
	}
	moved, _ := inner.Record(ctx, "acct/moved")
	if moved.Pause != nil || moved.HighestFence != 3 {
		t.Fatalf("acct/moved (not lost) %+v", moved)
	}
	rec, _ := inner.Record(ctx, "acct/lost")
	if rec.HighestFence != 4 || !rec.Unknown() || rec.Pause == nil || rec.Pause.Reason != store.PauseStoreLoss {
		t.Fatalf("acct/lost repaired to %+v", rec)
	}
}
