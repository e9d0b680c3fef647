package anchor_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/anchor"
	"github.com/fencegate/fencegate/store/memory"
)

// rig is a memory store wrapped against a real registry behind faults,
// with one trace of what both were asked.
type rig struct {
	tr    *trace
	reg   *faulty
	inner store.Store
	st    *anchor.Store
}

func newRig(t *testing.T) *rig {
	tr := &trace{}
	inner := memory.New(memory.Options{})
	reg := newFaulty(anchor.FromRegistry(newRegistry(t), caller), tr)
	st := wrapped(t, tracedStore{Store: inner, tr: tr}, reg, anchor.Options{})
	t.Cleanup(func() { _ = st.Close() })
	tr.take()
	return &rig{tr: tr, reg: reg, inner: inner, st: st}
}

func wantTrace(t *testing.T, tr *trace, want ...string) {
	t.Helper()
	if got := tr.take(); !reflect.DeepEqual(got, want) {
		t.Fatalf("calls\n got %q\nwant %q", got, want)
	}
}

// A Begin whose anchor step is not answered leaves nothing forwardable:
// Begin returns ErrNotAnchored (the proxy answers STORE_UNAVAILABLE and
// forwards nothing), whatever happened at the registry.
func TestBeginAnchorFailure(t *testing.T) {
	ctx := context.Background()
	t.Run("registry down", func(t *testing.T) {
		r := newRig(t)
		r.reg.fail("drop", "drop")
		in := attempt("acct/1", 1, 1, "A1")
		if _, err := r.st.Begin(ctx, in); !errors.Is(err, anchor.ErrNotAnchored) {
			t.Fatalf("begin: %v", err)
		}
		// Outcome unknown: the marker stays, to become UNKNOWN at its deadline.
		wantTrace(t, r.tr, "reg:BEGIN(drop)", "reg:BEGIN(drop)")
		if rec, _ := r.inner.Record(ctx, "acct/1"); rec.InFlight == nil {
			t.Fatal("marker withdrawn although the anchor step's outcome is unknown")
		}
	})
	t.Run("not applied, then anchored: settled before the abort", func(t *testing.T) {
		r := newRig(t)
		r.reg.fail("drop")
		if _, err := r.st.Begin(ctx, attempt("acct/1", 1, 1, "A1")); !errors.Is(err, anchor.ErrNotAnchored) {
			t.Fatalf("begin: %v", err)
		}
		wantTrace(t, r.tr, "reg:BEGIN(drop)", "reg:BEGIN", "reg:SETTLE", "store:Abort")
		if rec, _ := r.inner.Record(ctx, "acct/1"); rec.InFlight != nil {
			t.Fatalf("marker %+v left", rec.InFlight)
		}
		if a := anchoredOf(t, r.reg, "acct/1"); a.Pending != nil {
			t.Fatalf("anchor still pending: %+v", a)
		}
		mustProceed(t, r.st, attempt("acct/1", 1, 1, "A1")) // the client's retry goes through
	})
	t.Run("applied, answer lost: never aborted", func(t *testing.T) {
		r := newRig(t)
		r.reg.fail("lose")
		in := attempt("acct/1", 1, 1, "A1")
		if _, err := r.st.Begin(ctx, in); !errors.Is(err, anchor.ErrNotAnchored) {
			t.Fatalf("begin: %v", err)
		}
		// The anchor holds this very mutation: anchored by the lost call or
		// by an earlier attempt the store lost (story 2). Not aborted.
		wantTrace(t, r.tr, "reg:BEGIN(lose)", "reg:BEGIN")
		rec, _ := r.inner.Record(ctx, "acct/1")
		if rec.InFlight == nil || rec.Pause != nil {
			t.Fatalf("record %+v", rec)
		}
	})
}

// Weakening writes ask the anchor first and leave the store alone when
// the anchor step fails (fail closed); strengthening ones go to the store
// first.
func TestAnchorOrdering(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	in := attempt("acct/1", 1, 1, "A1")
	mustProceed(t, r.st, in)
	wantTrace(t, r.tr, "reg:BEGIN")

	// Abort after a dial failure: SETTLE, then the store. A failed SETTLE
	// leaves the marker.
	r.reg.fail("drop")
	if _, err := r.st.Abort(ctx, store.AbortInput{OpRef: in.Ref(), Now: time.Now()}); !errors.Is(err, anchor.ErrSettleRefused) {
		t.Fatalf("abort with the registry down: %v", err)
	}
	wantTrace(t, r.tr, "reg:SETTLE(drop)")
	if rec, _ := r.inner.Record(ctx, "acct/1"); rec.InFlight == nil {
		t.Fatal("the store aborted although the anchor still holds the mutation")
	}
	if _, err := r.st.Abort(ctx, store.AbortInput{OpRef: in.Ref(), Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	wantTrace(t, r.tr, "reg:SETTLE", "store:Abort")

	// Resolve as not applied: SETTLE first; as applied: the store only.
	in2 := attempt("acct/1", 1, 1, "A1")
	mustProceed(t, r.st, in2)
	if _, err := r.st.MarkUnknown(ctx, store.MarkUnknownInput{OpRef: in2.Ref(), Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	r.tr.take()
	r.reg.fail("drop")
	if _, err := r.st.Resolve(ctx, store.ResolveInput{OpRef: in2.Ref(), Now: time.Now()}); !errors.Is(err, anchor.ErrSettleRefused) {
		t.Fatalf("resolve with the registry down: %v", err)
	}
	wantTrace(t, r.tr, "reg:SETTLE(drop)")
	if rec, _ := r.inner.Record(ctx, "acct/1"); !rec.Unknown() {
		t.Fatal("resolved in the store although the anchor still holds the mutation")
	}
	if _, err := r.st.Resolve(ctx, store.ResolveInput{OpRef: in2.Ref(), Applied: true, BackendStatus: 200, Response: store.StoredResponse{Status: 200}, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	wantTrace(t, r.tr, "store:Resolve")

	// Pause: the store, then PAUSE. Resume: RESUME, then the store; a failed
	// RESUME leaves the resource paused.
	if _, err := r.st.Pause(ctx, store.PauseInput{Resource: "acct/1", Reason: store.PauseOperator, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	wantTrace(t, r.tr, "store:Pause", "reg:PAUSE")
	if a := anchoredOf(t, r.reg, "acct/1"); a.Paused != "OPERATOR" {
		t.Fatalf("anchored pause %q", a.Paused)
	}
	r.reg.fail("drop")
	if _, err := r.st.Resume(ctx, "acct/1"); !errors.Is(err, anchor.ErrSettleRefused) {
		t.Fatalf("resume with the registry down: %v", err)
	}
	wantTrace(t, r.tr, "reg:RESUME(drop)")
	if rec, _ := r.inner.Record(ctx, "acct/1"); rec.Pause == nil {
		t.Fatal("resumed in the store although the anchor still holds the pause")
	}
	if _, err := r.st.Resume(ctx, "acct/1"); err != nil {
		t.Fatal(err)
	}
	wantTrace(t, r.tr, "reg:RESUME", "store:Resume")

	// A Begin whose decision paused the resource anchors the pause.
	res, err := r.st.Begin(ctx, attempt("acct/1", 1, 2, "other-root-same-fence-is-fine"))
	if err != nil || res.Decision != store.DecisionProceed {
		t.Fatalf("begin: %v %s", err, res.Decision)
	}
	commit(t, r.st, res.Mutation.Ref())
	r.tr.take()
	dbl := attempt("acct/1", 1, 3, "x")
	dbl.Root = "another-root"
	if res, err := r.st.Begin(ctx, dbl); err != nil || res.Decision != store.DecisionFenceRegression {
		t.Fatalf("fence issued twice: %v %s", err, res.Decision)
	}
	wantTrace(t, r.tr, "reg:PAUSE")
	if a := anchoredOf(t, r.reg, "acct/1"); a.Paused != string(store.PauseFenceRegression) {
		t.Fatalf("anchored pause %q", a.Paused)
	}

	// The ledger: ENFORCE in the store, then the registry; a downgrade at
	// the registry first, and not in the store when that fails.
	if _, err := r.st.RecordEnforcement(ctx, store.EnforcementInput{Shape: "PUT /a/{}", Kind: store.EnforcementEnforce, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	wantTrace(t, r.tr, "store:ENFORCE", "reg:ENFORCE")
	r.reg.mu.Lock()
	r.reg.ledgerOK = false
	r.reg.mu.Unlock()
	if _, err := r.st.RecordEnforcement(ctx, store.EnforcementInput{Shape: "PUT /a/{}", Kind: store.EnforcementForcedDowngrade, Now: time.Now()}); err == nil {
		t.Fatal("downgrade recorded with the registry down")
	}
	wantTrace(t, r.tr, "reg:FORCED_DOWNGRADE")
	if es, _ := r.inner.Enforcements(ctx); len(es) != 1 || !es[0].Enforced() {
		t.Fatalf("store ledger %+v", es)
	}
}

// The ledger the sidecar checks is the union: a shape the registry has
// enforced stays enforced for a store that never saw it (a new bbolt
// file, an emptied Redis).
func TestLedgerUnion(t *testing.T) {
	ctx := context.Background()
	reg := anchor.FromRegistry(newRegistry(t), caller)
	if _, _, err := reg.RegisterStore(ctx, storeName, "gen1"); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.RecordLedger(ctx, storeName, fencegate.LedgerBody{Shape: "PUT /v1/items/{}", Kind: fencegate.LedgerEnforce}); err != nil {
		t.Fatal(err)
	}
	inner := memory.New(memory.Options{Generation: "gen1"})
	if _, err := inner.RecordEnforcement(ctx, store.EnforcementInput{Shape: "PUT /v1/other/{}", Kind: store.EnforcementEnforce, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	st := wrapped(t, inner, reg, anchor.Options{})
	es, err := st.Enforcements(ctx)
	if err != nil || len(es) != 2 || es[0].Shape != "PUT /v1/items/{}" || !es[0].Enforced() || !es[1].Enforced() {
		t.Fatalf("union %+v, %v", es, err)
	}
	if own, _ := inner.Enforcements(ctx); len(own) != 1 {
		t.Fatalf("the store's own ledger changed: %+v", own)
	}
}
