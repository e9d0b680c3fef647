package redis

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

// A Redis that restarted empty, met by a store that expects its generation
// from outside the pod (Options.ExpectedGeneration, the anchor's): every
// call fails closed; Generation still answers, with a new marker (what an
// operator acknowledges); ExpectGeneration of that marker lets calls
// through again, and of another keeps the store closed.
func TestExpectedGenerationAfterEmptyRestart(t *testing.T) {
	srv := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	ctx := context.Background()
	first, err := Open(ctx, Options{Addr: srv.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	gen, err := first.Generation(ctx)
	if err != nil || store.ValidateGeneration(gen) != nil {
		t.Fatalf("generation %q, %v", gen, err)
	}
	if again, err := first.Generation(ctx); err != nil || again != gen {
		t.Fatalf("generation changed to %q, %v", again, err)
	}
	_ = first.Close()

	st, err := Open(ctx, Options{Addr: srv.Addr(), ExpectedGeneration: gen})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	in := storetest.Attempt("acct/1", 5, 1, "a")
	if res, err := st.Begin(ctx, in); err != nil || res.Decision != store.DecisionProceed {
		t.Fatalf("begin: %v %s", err, res.Decision)
	}

	srv.Wipe()

	if _, err := st.Begin(ctx, storetest.Attempt("acct/1", 3, 1, "stale")); !errors.Is(err, ErrGenerationChanged) {
		t.Fatalf("begin on the emptied Redis: %v, want ErrGenerationChanged", err)
	}
	if _, err := st.Records(ctx, store.RecordsQuery{Limit: 10}); !errors.Is(err, ErrGenerationChanged) {
		t.Fatalf("records on the emptied Redis: %v", err)
	}
	now, err := st.Generation(ctx)
	if err != nil || now == gen || store.ValidateGeneration(now) != nil {
		t.Fatalf("generation of the emptied Redis %q (was %q), %v", now, gen, err)
	}
	if err := st.ExpectGeneration(ctx, gen); !errors.Is(err, ErrGenerationChanged) {
		t.Fatalf("expecting the old generation: %v", err)
	}
	if _, err := st.Record(ctx, "acct/1"); !errors.Is(err, ErrGenerationChanged) {
		t.Fatalf("record while closed: %v", err)
	}
	if err := st.ExpectGeneration(ctx, now); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Record(ctx, "acct/1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("record after adopting the new generation: %v, want ErrNotFound", err)
	}
	if err := st.ExpectGeneration(ctx, "NOT-VALID"); !errors.Is(err, store.ErrInvalidInput) {
		t.Fatalf("malformed generation: %v", err)
	}
	if _, err := Open(ctx, Options{Addr: srv.Addr(), ExpectedGeneration: now, GenerationFile: t.TempDir() + "/gen.json"}); err == nil {
		t.Fatal("ExpectedGeneration with a GenerationFile was accepted")
	}
}

// Story 2 at the store: a Redis restored from an older AOF while a segment
// was in flight forgets the marker, and the retry of that segment would
// proceed again (the backend would hold A1, A2, A2). The generation marker
// survives a restore, so only the outside anchor shows it: the Begin's
// Prior does not cover the anchored progress, so nothing is forwarded, and
// Repair puts the lost mutation back as UNKNOWN and pauses the resource.
func TestRestoredRedisRepairedFromTheAnchor(t *testing.T) {
	srv := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	ctx := context.Background()
	st, err := Open(ctx, Options{Addr: srv.Addr(), CallerClock: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	gen, err := st.Generation(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.ExpectGeneration(ctx, gen); err != nil {
		t.Fatal(err)
	}
	var anchor fencegate.Progress
	// begin is the sidecar's Begin and anchor step: the store proceeds, and
	// the mutation is forwarded only if Prior covers the anchor.
	begin := func(in store.BeginInput) (store.BeginResult, bool) {
		t.Helper()
		res, err := st.Begin(ctx, in)
		if err != nil || res.Decision != store.DecisionProceed {
			t.Fatalf("begin %s: %v %s", in.Ref().OperationID(), err, res.Decision)
		}
		if !store.ProgressOf(res.Prior).Covers(anchor) {
			return res, false
		}
		anchor = store.ProgressOf(res.Record)
		return res, true
	}
	a1 := storetest.Attempt("acct/1", 5, 1, "A1")
	if _, ok := begin(a1); !ok {
		t.Fatal("A1 not anchored")
	}
	if _, err := st.Commit(ctx, storetest.Answer(a1.Ref())); err != nil {
		t.Fatal(err)
	}

	snapshot := srv.Snapshot()

	a2 := storetest.Attempt("acct/1", 5, 2, "A2")
	if _, ok := begin(a2); !ok {
		t.Fatal("A2 not anchored")
	} // forwarded: the backend applies A2; its Commit never comes
	srv.RestoreSnapshot(snapshot)

	if again, err := st.Generation(ctx); err != nil || again != gen {
		t.Fatalf("the restore kept the generation %q? got %q, %v", gen, again, err)
	}
	retry, ok := begin(a2) // the store forgot A2: it proceeds...
	if ok {
		t.Fatal("the retry of A2 was anchored: the backend would apply A2 twice")
	}
	// ...but its Prior does not cover the anchor: repair.
	rec, err := st.Repair(ctx, store.RepairInput{Resource: "acct/1", Anchored: anchor, Detail: "anchor: store behind", Now: a2.Now, Window: a2.Deadline.Sub(a2.Now)})
	if err != nil {
		t.Fatal(err)
	}
	m := rec.InFlight
	if !store.ProgressOf(rec).Covers(anchor) || rec.Pause == nil || rec.Pause.Reason != store.PauseStoreLoss ||
		m == nil || m.OperationID != retry.Mutation.OperationID || m.State != store.MutationUnknown || m.Cause != store.CauseStoreLoss {
		t.Fatalf("repaired record %+v, marker %+v", rec, m)
	}
	res, err := st.Begin(ctx, a2)
	if err != nil || res.Decision != store.DecisionPaused || res.Code() != fencegate.CodeFenceRegression || !strings.Contains(res.Detail, "STORE_LOSS") {
		t.Fatalf("A2 again: %v %s %s", err, res.Decision, res.Code())
	}
	if _, err := st.Abort(ctx, store.AbortInput{OpRef: a2.Ref(), Now: a2.Now}); !errors.Is(err, store.ErrOutcomeUnknown) {
		t.Fatalf("abort of the put-back mutation: %v", err)
	}
	us, err := st.ListUnknown(ctx, a2.Now)
	if err != nil || len(us) != 1 || us[0].OperationID != a2.Ref().OperationID() {
		t.Fatalf("unknown %+v, %v", us, err)
	}
}
