package anchor_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/anchor"
	"github.com/fencegate/fencegate/store/memory"
)

// The upgrade from a sidecar that kept its Redis generation and its
// checkpoints on the pod: the recorded generation is registered first, so
// a store that lost data before the upgrade is caught; each checkpoint the
// store does not show is anchored (same fence: its last segment) or the
// resource paused; Done runs once, after both.
func TestUpgrade(t *testing.T) {
	ctx := context.Background()
	t.Run("store lost data before the upgrade", func(t *testing.T) {
		done := 0
		reg := anchor.FromRegistry(newRegistry(t), caller)
		st := wrapped(t, memory.New(memory.Options{}), reg, anchor.Options{Upgrade: anchor.Upgrade{Generation: "recordedbefore", Done: func() error { done++; return nil }}})
		if _, err := st.Begin(ctx, attempt("acct/1", 1, 1, "x")); !errors.Is(err, anchor.ErrStoreLost) {
			t.Fatalf("begin: %v", err)
		}
		if done != 0 {
			t.Fatal("Done before the upgrade was taken into account")
		}
	})
	t.Run("checkpoints", func(t *testing.T) {
		inner := memory.New(memory.Options{})
		for _, r := range []string{"same", "covered", "higher", "unknown"} {
			in := attempt("acct/"+r, 3, 1, "p")
			if _, err := inner.Begin(ctx, in); err != nil {
				t.Fatal(err)
			}
			commit(t, inner, in.Ref())
		}
		gen, _ := inner.Generation(ctx)
		done := 0
		reg := anchor.FromRegistry(newRegistry(t), caller)
		st := wrapped(t, inner, reg, anchor.Options{Upgrade: anchor.Upgrade{Generation: gen, Done: func() error { done++; return nil }, Checkpoints: []anchor.Checkpoint{
			{Resource: "acct/same", Fence: 3, Seq: 4},                                    // the store lost segments 2..4
			{Resource: "acct/covered", Fence: 3, Seq: 1},                                 // nothing lost
			{Resource: "acct/higher", Fence: 5, Seq: 2},                                  // a higher fence lost
			{Resource: "acct/unknown", Fence: 3, Seq: 1, UnknownFence: 3, UnknownSeq: 2}, // an UNKNOWN forgotten
			{Resource: "acct/gone", Fence: 1, Seq: 1},                                    // no record at all
		}}})
		if done != 1 {
			t.Fatalf("Done ran %d times", done)
		}
		rec := func(r string) store.Record { x, _ := st.Record(ctx, r); return x }
		if r := rec("acct/same"); r.LastSeq != 4 || r.Pause == nil || r.Pause.Reason != store.PauseStoreLoss {
			t.Fatalf("acct/same %+v", r)
		}
		if a := anchoredOf(t, reg, "acct/same"); a.LastSeq != 4 {
			t.Fatalf("anchor of acct/same %+v", a)
		}
		if r := rec("acct/covered"); r.Pause != nil {
			t.Fatalf("acct/covered paused: %+v", r.Pause)
		}
		for _, r := range []string{"acct/higher", "acct/unknown", "acct/gone"} {
			if x := rec(r); x.Pause == nil || x.Pause.Reason != store.PauseFenceRegression {
				t.Fatalf("%s not paused: %+v", r, x)
			}
			if a := anchoredOf(t, reg, r); a.Paused != string(store.PauseFenceRegression) {
				t.Fatalf("pause of %s not anchored: %+v", r, a)
			}
		}
		mustProceed(t, st, attempt("acct/covered", 3, 2, "q"))
	})
}
