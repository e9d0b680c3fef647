package guard_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/guard"
	"github.com/fencegate/fencegate/store/memory"
	"github.com/fencegate/fencegate/store/storetest"
)

// The guard passes the store's conformance suite: over a store that loses
// nothing it changes no decision.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(tb testing.TB) store.Store {
		g, err := guard.Wrap(memory.New(memory.Options{}), filepath.Join(tb.TempDir(), "cp.json"))
		if err != nil {
			tb.Fatal(err)
		}
		return g
	}, storetest.RapidRounds(10))
}

func wrap(t *testing.T, inner store.Store, path string) *guard.Store {
	t.Helper()
	g, err := guard.Wrap(inner, path)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func begin(t *testing.T, s store.Store, in store.BeginInput) store.BeginResult {
	t.Helper()
	res, err := s.Begin(context.Background(), in)
	if err != nil {
		t.Fatalf("begin %s fence %d seq %d: %v", in.Resource, in.Fence, in.Seq, err)
	}
	return res
}

func accept(t *testing.T, s store.Store, in store.BeginInput) {
	t.Helper()
	if res := begin(t, s, in); res.Decision != store.DecisionProceed {
		t.Fatalf("begin fence %d seq %d: %s %s", in.Fence, in.Seq, res.Decision, res.Detail)
	}
	if _, err := s.Commit(context.Background(), storetest.Answer(in.Ref())); err != nil {
		t.Fatal(err)
	}
}

// wantRegression checks a Begin is refused FENCE_REGRESSION and the
// resource is paused in the (new) inner store with a detail naming the
// checkpoint, and that the lower fence was not written.
func wantRegression(t *testing.T, s store.Store, inner store.Store, in store.BeginInput, detail string) {
	t.Helper()
	res := begin(t, s, in)
	if res.Decision != store.DecisionFenceRegression {
		t.Fatalf("begin fence %d after the loss: %s %s, want FENCE_REGRESSION", in.Fence, res.Decision, res.Detail)
	}
	rec, err := inner.Record(context.Background(), in.Resource)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Pause == nil || rec.Pause.Reason != store.PauseFenceRegression || !strings.Contains(rec.Pause.Detail, detail) {
		t.Fatalf("record after the loss: pause %+v, want FENCE_REGRESSION naming %q", rec.Pause, detail)
	}
	if rec.HighestFence != 0 || rec.InFlight != nil {
		t.Fatalf("the lower fence was written: %+v", rec)
	}
	// Paused: the next attempt, of any fence, is refused too.
	if res := begin(t, s, in); res.Decision != store.DecisionPaused {
		t.Fatalf("second attempt: %s, want PAUSED", res.Decision)
	}
}

// A store that lost its data (the inner store swapped for an empty one,
// the sidecar restarted on its checkpoint file) refuses and pauses a
// checkpointed resource, lets a resource it never saw proceed, and never
// accepts the lower fence.
func TestLostRecordIsRefusedAndPaused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store-checkpoint.json")
	g := wrap(t, memory.New(memory.Options{}), path)
	accept(t, g, storetest.Attempt("acct/1", 5, 1, "a"))
	accept(t, g, storetest.Attempt("acct/1", 5, 2, "b"))
	if cp, ok := g.Checkpoint("acct/1"); !ok || cp.Fence != 5 || cp.Seq != 2 {
		t.Fatalf("checkpoint %+v %v, want fence 5 seq 2", cp, ok)
	}

	empty := memory.New(memory.Options{})
	g2 := wrap(t, empty, path)
	wantRegression(t, g2, empty, storetest.Attempt("acct/1", 3, 1, "old owner"), "fence 5, segment 2")

	// A resource never seen proceeds.
	if res := begin(t, g2, storetest.Attempt("acct/2", 1, 1, "x")); res.Decision != store.DecisionProceed {
		t.Fatalf("unseen resource: %s", res.Decision)
	}
}

// A store restored to an older state (a lower segment under the same fence)
// is refused too, even for an attempt that would fit that older state.
func TestOlderStateIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cp.json")
	old := memory.New(memory.Options{})
	g := wrap(t, old, path)
	accept(t, g, storetest.Attempt("r", 5, 1, "a"))

	// "Snapshot" is the state after segment 1; segment 2 is then lost.
	snapshotted := memory.New(memory.Options{})
	accept(t, snapshotted, storetest.Attempt("r", 5, 1, "a"))
	accept(t, g, storetest.Attempt("r", 5, 2, "b"))

	g2 := wrap(t, snapshotted, path)
	res := begin(t, g2, storetest.Attempt("r", 5, 2, "other payload"))
	if res.Decision != store.DecisionFenceRegression || !strings.Contains(res.Detail, "last segment is 1") {
		t.Fatalf("segment 2 again on the older state: %s %s, want FENCE_REGRESSION", res.Decision, res.Detail)
	}
}

// An outstanding UNKNOWN that the store forgot is detected: the resource
// pauses instead of letting a new mutation past the unknown one.
func TestForgottenUnknownIsDetected(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cp.json")
	g := wrap(t, memory.New(memory.Options{}), path)
	accept(t, g, storetest.Attempt("r", 5, 1, "a"))
	in := storetest.Attempt("r", 5, 2, "b")
	if res := begin(t, g, in); res.Decision != store.DecisionProceed {
		t.Fatal(res.Decision)
	}
	if _, err := g.MarkUnknown(context.Background(), store.MarkUnknownInput{OpRef: in.Ref(), Now: storetest.T0}); err != nil {
		t.Fatal(err)
	}

	// The lost store still has segment 1 under fence 5, but not the unknown.
	restored := memory.New(memory.Options{})
	accept(t, restored, storetest.Attempt("r", 5, 1, "a"))
	g2 := wrap(t, restored, path)
	res := begin(t, g2, storetest.Attempt("r", 5, 2, "another payload"))
	if res.Decision != store.DecisionFenceRegression || !strings.Contains(res.Detail, "UNKNOWN mutation fence 5 segment 2 outstanding") {
		t.Fatalf("after the unknown was forgotten: %s %s, want FENCE_REGRESSION", res.Decision, res.Detail)
	}
	rec, err := restored.Record(context.Background(), "r")
	if err != nil || rec.Pause == nil || rec.InFlight != nil || rec.LastSeq != 1 {
		t.Fatalf("record %+v %v: want paused, nothing in flight", rec, err)
	}
}

// A settled unknown (resolved through this sidecar) is no longer
// outstanding, and an operator's resume is the acknowledgement: the
// resource then accepts what fits the store as it is.
func TestResolveAndResumeAcknowledge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cp.json")
	inner := memory.New(memory.Options{})
	g := wrap(t, inner, path)
	in := storetest.Attempt("r", 5, 1, "a")
	begin(t, g, in)
	if _, err := g.MarkUnknown(context.Background(), store.MarkUnknownInput{OpRef: in.Ref(), Now: storetest.T0}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Resolve(context.Background(), store.ResolveInput{OpRef: in.Ref(), Now: in.QuietAt}); err != nil {
		t.Fatal(err)
	}
	if cp, _ := g.Checkpoint("r"); cp.UnknownSeq != 0 {
		t.Fatalf("checkpoint after resolve: %+v", cp)
	}
	accept(t, g, storetest.Attempt("r", 5, 1, "a2"))

	empty := memory.New(memory.Options{})
	g2 := wrap(t, empty, path)
	wantRegression(t, g2, empty, storetest.Attempt("r", 6, 1, "new"), "fence 5, segment 1")
	if _, err := g2.Resume(context.Background(), "r"); err != nil {
		t.Fatal(err)
	}
	if res := begin(t, g2, storetest.Attempt("r", 6, 1, "new")); res.Decision != store.DecisionProceed {
		t.Fatalf("after the operator's resume: %s %s", res.Decision, res.Detail)
	}
}

// The checkpoints are bounded: past MaxEntries the least recently used
// resource is dropped.
func TestCheckpointsBounded(t *testing.T) {
	g, err := guard.WrapOptions(memory.New(memory.Options{}), filepath.Join(t.TempDir(), "cp.json"), guard.Options{MaxEntries: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"a", "b", "c"} {
		accept(t, g, storetest.Attempt(r, 1, 1, "x"))
	}
	if _, ok := g.Checkpoint("a"); ok {
		t.Fatal("oldest checkpoint kept past the bound")
	}
	for _, r := range []string{"b", "c"} {
		if _, ok := g.Checkpoint(r); !ok {
			t.Fatalf("checkpoint %s dropped", r)
		}
	}
}

// A corrupt checkpoint file fails Wrap: the guard never starts blind.
func TestCorruptCheckpointFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cp.json")
	if err := writeFile(path, "{not json"); err != nil {
		t.Fatal(err)
	}
	if _, err := guard.Wrap(memory.New(memory.Options{}), path); err == nil {
		t.Fatal("corrupt checkpoints accepted")
	}
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o600) }
