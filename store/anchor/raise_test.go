package anchor_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/anchor"
)

// A sidecar killed between its store's Begin and the anchor's answer
// leaves a marker that raised the fence without being anchored. Settling
// it (the reconciler's "not applied") must not let the higher fence drop
// the anchored pending mutation of the lower one: when the store holds
// that mutation's receipt it was committed, and the settle goes through;
// when it does not (the store lost it, and it may still land), the settle
// is refused and the resource paused.
func TestUnanchoredRaiseSettle(t *testing.T) {
	ctx := context.Background()
	t.Run("lower mutation committed", func(t *testing.T) {
		be := newBolt(t)
		reg := anchor.FromRegistry(newRegistry(t), caller)
		inner := be.Open(t)
		st := wrapped(t, inner, reg, anchor.Options{})
		defer st.Close()
		a := attempt("acct/1", 1, 1, "A1")
		mustProceed(t, st, a)
		commit(t, st, a.Ref())
		b := attempt("acct/1", 2, 1, "B1")
		if _, err := inner.Begin(ctx, b); err != nil { // the sidecar dies here
			t.Fatal(err)
		}
		if _, err := st.MarkUnknown(ctx, store.MarkUnknownInput{OpRef: b.Ref(), Now: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Resolve(ctx, store.ResolveInput{OpRef: b.Ref(), Now: time.Now(), Closed: true}); err != nil {
			t.Fatalf("resolve of the unanchored B: %v", err)
		}
		if an := anchoredOf(t, reg, "acct/1"); an.Fence != 2 || an.Pending != nil {
			t.Fatalf("anchor %+v", an)
		}
		mustProceed(t, st, attempt("acct/1", 2, 1, "B1"))
	})
	t.Run("lower mutation lost", func(t *testing.T) {
		be := newBolt(t)
		reg := anchor.FromRegistry(newRegistry(t), caller)
		st := wrapped(t, be.Open(t), reg, anchor.Options{})
		_ = st.Close()
		snap := be.Snapshot(t)
		st = wrapped(t, be.Open(t), reg, anchor.Options{})
		a := attempt("acct/1", 1, 1, "A1")
		mustProceed(t, st, a) // forwarded; may still land
		_ = st.Close()
		be.Restore(t, snap) // the store forgets A

		inner := be.Open(t)
		st = wrapped(t, inner, reg, anchor.Options{})
		defer st.Close()
		b := attempt("acct/1", 2, 1, "B1")
		if _, err := inner.Begin(ctx, b); err != nil { // the sidecar dies here
			t.Fatal(err)
		}
		if _, err := st.MarkUnknown(ctx, store.MarkUnknownInput{OpRef: b.Ref(), Now: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Resolve(ctx, store.ResolveInput{OpRef: b.Ref(), Now: time.Now(), Closed: true}); !errors.Is(err, anchor.ErrSettleRefused) {
			t.Fatalf("resolve of the unanchored B over the lost A: %v", err)
		}
		an := anchoredOf(t, reg, "acct/1")
		if an.Fence != 1 || an.Pending == nil || an.Paused != string(store.PauseStoreLoss) {
			t.Fatalf("anchor %+v", an)
		}
		rec, _ := inner.Record(ctx, "acct/1")
		if !rec.Unknown() || rec.Pause == nil || rec.Pause.Reason != store.PauseStoreLoss {
			t.Fatalf("record %+v", rec)
		}
	})
}
