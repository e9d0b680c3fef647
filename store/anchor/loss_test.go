package anchor_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/anchor"
)

// Story 2: a store restored behind its anchor while a segment is in
// flight. A1 commits; the store is snapshotted; A2 is anchored (and
// forwarded: the backend applies it) but never committed; the store comes
// back from the snapshot, so it forgot A2. A new wrapper (a new pod) opens
// it: the generation is the same, so only the anchor shows the loss. The
// retry of A2 is NOT answered PROCEED (the backend would hold A1, A2, A2):
// it is PAUSED (FENCE_REGRESSION, STORE_LOSS), the fence is not lowered,
// and A2 is UNKNOWN for the reconciler to settle from the backend.
func TestRestoredStoreCaughtAtNextBegin(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be.Name(), func(t *testing.T) {
			ctx := context.Background()
			reg := anchor.FromRegistry(newRegistry(t), caller)
			st := wrapped(t, be.Open(t), reg, anchor.Options{})
			a1 := attempt("acct/1", 5, 1, "A1")
			mustProceed(t, st, a1)
			commit(t, st, a1.Ref())
			_ = st.Close()
			snap := be.Snapshot(t)

			st = wrapped(t, be.Open(t), reg, anchor.Options{})
			a2 := attempt("acct/1", 5, 2, "A2")
			mustProceed(t, st, a2) // forwarded; its answer never comes
			_ = st.Close()
			be.Restore(t, snap)

			st = wrapped(t, be.Open(t), reg, anchor.Options{})
			defer st.Close()
			retry := attempt("acct/1", 5, 2, "A2")
			res, err := st.Begin(ctx, retry)
			if err != nil || res.Decision != store.DecisionPaused || res.Code() != fencegate.CodeFenceRegression || res.Record.Pause == nil ||
				res.Record.Pause.Reason != store.PauseStoreLoss || !strings.Contains(res.Detail, "root-5/2") {
				t.Fatalf("retry of A2 after the restore: %v %s %s %q", err, res.Decision, res.Code(), res.Detail)
			}
			rec, err := st.Record(ctx, "acct/1")
			if err != nil || rec.HighestFence != 5 || rec.LastSeq != 1 || rec.Pause == nil || rec.Pause.Reason != store.PauseStoreLoss {
				t.Fatalf("record %+v, %v", rec, err)
			}
			us, err := st.ListUnknown(ctx, time.Now())
			if err != nil || len(us) != 1 || us[0].OperationID != a2.Ref().OperationID() || us[0].Cause != store.CauseStoreLoss {
				t.Fatalf("unknown %+v, %v", us, err)
			}
			// Every Begin of the resource is refused until an operator resumes.
			if res, err := st.Begin(ctx, attempt("acct/1", 6, 1, "B1")); err != nil || res.Decision == store.DecisionProceed {
				t.Fatalf("B after the repair: %v %s", err, res.Decision)
			}
			a := anchoredOf(t, reg, "acct/1")
			if !store.ProgressOf(rec).Covers(a) || a.Paused != string(store.PauseStoreLoss) || a.Pending == nil || a.Pending.Seq != 2 {
				t.Fatalf("anchor %+v", a)
			}
		})
	}
}

// Story 3, registry mode: A's write of fence 1 is UNKNOWN (it may still
// land) and the store forgets it; a NEW sidecar on the store must not
// accept B (fence 2) while A may land: B is paused (STORE_LOSS), its
// never-forwarded fence withdrawn, and A's mutation UNKNOWN again.
func TestForgottenUnknownBlocksHigherFence(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be.Name(), func(t *testing.T) {
			ctx := context.Background()
			reg := anchor.FromRegistry(newRegistry(t), caller)
			st := wrapped(t, be.Open(t), reg, anchor.Options{})
			_ = st.Close()
			snap := be.Snapshot(t) // the store registered, nothing on acct/1

			st = wrapped(t, be.Open(t), reg, anchor.Options{})
			a := attempt("acct/1", 1, 1, "A1")
			mustProceed(t, st, a)
			if _, err := st.MarkUnknown(ctx, store.MarkUnknownInput{OpRef: a.Ref(), Now: time.Now()}); err != nil {
				t.Fatal(err)
			}
			_ = st.Close()
			be.Restore(t, snap)

			st = wrapped(t, be.Open(t), reg, anchor.Options{})
			defer st.Close()
			res, err := st.Begin(ctx, attempt("acct/1", 2, 1, "B1"))
			if err != nil || res.Decision == store.DecisionProceed || res.Code() != fencegate.CodeFenceRegression {
				t.Fatalf("B on the store that forgot A: %v %s %s", err, res.Decision, res.Code())
			}
			rec, err := st.Record(ctx, "acct/1")
			if err != nil || rec.HighestFence != 1 || !rec.Unknown() || rec.InFlight.OperationID != a.Ref().OperationID() {
				t.Fatalf("record %+v (marker %+v), %v", rec, rec.InFlight, err)
			}
			// Settling A (not applied) and resuming lets B through, in order.
			if _, err := st.Resolve(ctx, store.ResolveInput{OpRef: a.Ref(), Now: time.Now(), Closed: true}); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Resume(ctx, "acct/1"); err != nil {
				t.Fatal(err)
			}
			mustProceed(t, st, attempt("acct/1", 2, 1, "B1"))
		})
	}
}

// A store that lost its whole data set (a deleted bbolt file, an emptied
// Redis) presents another generation: the wrapper opens lost, Begin
// answers ErrStoreLost while reads pass, and after the operator
// acknowledges the new generation at the registry the next recheck repairs
// every anchored resource (fences raised, the pending mutation UNKNOWN,
// paused) before writes are accepted again. The ledger survives too.
func TestLostStoreAcknowledgedAndRepaired(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be.Name(), func(t *testing.T) {
			ctx := context.Background()
			r := newRegistry(t)
			reg := anchor.FromRegistry(r, caller)
			st := wrapped(t, be.Open(t), reg, anchor.Options{})
			a := attempt("acct/1", 3, 1, "A1")
			mustProceed(t, st, a)
			commit(t, st, a.Ref())
			b := attempt("acct/2", 4, 1, "B1")
			mustProceed(t, st, b) // in flight when the data set goes
			if _, err := st.RecordEnforcement(ctx, store.EnforcementInput{Shape: "PUT /v1/items/{}", Kind: store.EnforcementEnforce, Now: time.Now()}); err != nil {
				t.Fatal(err)
			}
			_ = st.Close()
			be.Wipe(t)

			st = wrapped(t, be.Open(t), reg, anchor.Options{})
			defer st.Close()
			if _, err := st.Begin(ctx, attempt("acct/1", 2, 1, "stale")); !errors.Is(err, anchor.ErrStoreLost) {
				t.Fatalf("begin on the lost store: %v", err)
			}
			if st.Lost() == nil || !st.Report().Lost {
				t.Fatal("not reported lost")
			}
			if _, err := st.Record(ctx, "acct/1"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("read of the lost store: %v", err)
			}
			es, err := st.Enforcements(ctx)
			if err != nil || len(es) != 1 || !es[0].Enforced() {
				t.Fatalf("ledger of the lost store: %+v, %v", es, err)
			}
			if err := st.Recheck(ctx); err != nil || st.Lost() == nil {
				t.Fatalf("recheck before the acknowledgement: %v, lost %v", err, st.Lost())
			}

			gen, err := st.Generation(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.AcknowledgeLoss(ctx, storeName, gen); err != nil {
				t.Fatal(err)
			}
			if err := st.Recheck(ctx); err != nil || st.Lost() != nil {
				t.Fatalf("recheck after the acknowledgement: %v, lost %v", err, st.Lost())
			}
			r1, _ := st.Record(ctx, "acct/1")
			r2, _ := st.Record(ctx, "acct/2")
			// A1's commit was never anchored (commits need no anchor step):
			// the anchor holds it as pending, so it comes back UNKNOWN, for
			// the reconciler to settle as applied from the backend.
			if r1.HighestFence != 3 || !r1.Unknown() || r1.InFlight.OperationID != a.Ref().OperationID() || r1.Pause == nil || r1.Pause.Reason != store.PauseStoreLoss {
				t.Fatalf("acct/1 repaired to %+v", r1)
			}
			if r2.HighestFence != 4 || !r2.Unknown() || r2.InFlight.OperationID != b.Ref().OperationID() {
				t.Fatalf("acct/2 repaired to %+v", r2)
			}
			if res, err := st.Begin(ctx, attempt("acct/1", 2, 1, "stale")); err != nil || res.Decision == store.DecisionProceed {
				t.Fatalf("stale fence after the repair: %v %s", err, res.Decision)
			}
			mustProceed(t, st, attempt("acct/3", 1, 1, "C1")) // writes flow again
		})
	}
}

// Story 2 again, with the registry's answer to the retry's anchor step
// lost: the anchor holds exactly the retried mutation (the original
// attempt, forwarded before the restore), so a SETTLE would match it and
// an Abort would let the next retry be anchored and forwarded: A2 twice.
// The marker is left instead (it becomes UNKNOWN at its deadline, for the
// reconciler to settle from the backend), and no retry proceeds.
func TestLostAnswerAfterRestoreNeverAborts(t *testing.T) {
	ctx := context.Background()
	be := newBolt(t)
	tr := &trace{}
	reg := newFaulty(anchor.FromRegistry(newRegistry(t), caller), tr)
	st := wrapped(t, be.Open(t), reg, anchor.Options{})
	a1 := attempt("acct/1", 5, 1, "A1")
	mustProceed(t, st, a1)
	commit(t, st, a1.Ref())
	_ = st.Close()
	snap := be.Snapshot(t)
	st = wrapped(t, be.Open(t), reg, anchor.Options{})
	mustProceed(t, st, attempt("acct/1", 5, 2, "A2")) // forwarded; its answer never comes
	_ = st.Close()
	be.Restore(t, snap)

	st = wrapped(t, be.Open(t), reg, anchor.Options{})
	defer st.Close()
	reg.fail("lose")
	for i := range 3 {
		if res, err := st.Begin(ctx, attempt("acct/1", 5, 2, "A2")); err == nil && res.Decision == store.DecisionProceed {
			t.Fatalf("retry %d of A2 proceeds: the backend would apply A2 twice", i)
		}
	}
	rec, _ := st.Record(ctx, "acct/1")
	if rec.InFlight == nil || rec.InFlight.OperationID != attempt("acct/1", 5, 2, "A2").Ref().OperationID() {
		t.Fatalf("record %+v", rec)
	}
}
