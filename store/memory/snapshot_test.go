package memory_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/memory"
	"github.com/fencegate/fencegate/store/storetest"
)

// TestSnapshotRestore: Restore puts back exactly the state Snapshot saw
// (records, receipts, quarantine, ledger); what was written since is gone;
// a snapshot shares nothing with the store and can be restored twice.
func TestSnapshotRestore(t *testing.T) {
	ctx := context.Background()
	s := memory.New(memory.Options{})
	write := func(fence, seq uint64, payload string) {
		t.Helper()
		res, err := s.Begin(ctx, storetest.Attempt("r", fence, seq, payload))
		if err != nil || res.Decision != store.DecisionProceed {
			t.Fatalf("Begin %d/%d: %v %v", fence, seq, res.Decision, err)
		}
		if _, err := s.Commit(ctx, storetest.Answer(res.Mutation.Ref())); err != nil {
			t.Fatal(err)
		}
	}
	state := func() (store.Record, []store.Quarantine, []store.Enforcement, error) {
		rec, err := s.Record(ctx, "r")
		q, _ := s.ListQuarantined(ctx, "")
		e, _ := s.Enforcements(ctx)
		return rec, q, e, err
	}
	gen0, _ := s.Generation(ctx)
	write(1, 1, "a")
	if _, err := s.RecordEnforcement(ctx, store.EnforcementInput{Shape: "PUT /x/{}", Kind: store.EnforcementEnforce, Now: storetest.T0}); err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	rec0, q0, e0, _ := state()

	write(1, 2, "b")
	if res, err := s.Begin(ctx, storetest.Attempt("r", 1, 1, "other")); err != nil || res.Decision != store.DecisionSegmentConflict {
		t.Fatalf("conflict: %v %v", res.Decision, err)
	}
	if rec, _, _, _ := state(); rec.LastSeq != 2 {
		t.Fatalf("last segment %d before the restore", rec.LastSeq)
	}

	for range 2 {
		s.Restore(snap)
		rec, q, e, err := state()
		if err != nil || !reflect.DeepEqual(rec, rec0) || !reflect.DeepEqual(q, q0) || !reflect.DeepEqual(e, e0) {
			t.Fatalf("after Restore: record %+v (want %+v), quarantine %v (want %v), ledger %v (want %v), %v", rec, rec0, q, q0, e, e0, err)
		}
		if _, err := s.Receipt(ctx, store.ReceiptKey{Resource: "r", Fence: 1, Seq: 2}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("segment 2's receipt survived the restore: %v", err)
		}
		if _, err := s.Receipt(ctx, store.ReceiptKey{Resource: "r", Fence: 1, Seq: 1}); err != nil {
			t.Fatalf("segment 1's receipt is gone: %v", err)
		}
		// The restored store works on: segment 2 proceeds again.
		write(1, 2, "b")
	}

	empty := memory.New(memory.Options{Generation: "another"}).Snapshot()
	s.Restore(empty)
	if gen, _ := s.Generation(ctx); gen != "another" || gen == gen0 {
		t.Fatalf("generation after restoring another store's snapshot: %q (was %q)", gen, gen0)
	}
	if _, err := s.Record(ctx, "r"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a restore of an empty snapshot kept the record: %v", err)
	}
	if st, err := s.Stats(ctx); err != nil || st.Resources != 0 || st.Receipts != 0 {
		t.Fatalf("stats after emptying: %+v %v", st, err)
	}
}
