package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

// storedCounts reads the counts bucket, and counts the receipts bucket by a
// walk, in one snapshot.
func storedCounts(tb testing.TB, db *bbolt.DB) (kept, walked map[string]uint64) {
	tb.Helper()
	kept, walked = map[string]uint64{}, map[string]uint64{}
	err := db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketCounts)
		if b == nil {
			return fmt.Errorf("no counts bucket")
		}
		if err := b.ForEach(func(k, v []byte) error {
			if len(v) != 8 {
				return fmt.Errorf("count of %q: %x", k, v)
			}
			kept[string(k)] = binary.BigEndian.Uint64(v)
			return nil
		}); err != nil {
			return err
		}
		return tx.Bucket(bucketReceipts).ForEach(func(k, _ []byte) error {
			walked[string(k[:bytes.IndexByte(k, 0)])]++
			return nil
		})
	})
	if err != nil {
		tb.Fatal(err)
	}
	return kept, walked
}

// checkCounts fails unless the counts bucket holds exactly the number of
// receipts each resource has (and no key for a resource without any); it
// returns the counts.
func checkCounts(tb testing.TB, db *bbolt.DB, when string) map[string]uint64 {
	tb.Helper()
	kept, walked := storedCounts(tb, db)
	if !maps.Equal(kept, walked) {
		tb.Fatalf("%s: counts bucket %v, receipts stored %v", when, kept, walked)
	}
	return kept
}

// beginCommit begins and commits segment seq of fence on resource, the
// Commit trimming to keep receipts (0: none).
func beginCommit(tb testing.TB, s store.Store, resource string, fence, seq uint64, keep int, now time.Time) {
	tb.Helper()
	ctx := context.Background()
	in := storetest.Attempt(resource, fence, seq, "p"+strconv.FormatUint(seq, 10))
	in.Now, in.Deadline, in.QuietAt = now, now.Add(time.Minute), now.Add(2*time.Minute)
	if r, err := s.Begin(ctx, in); err != nil || r.Decision != store.DecisionProceed {
		tb.Fatalf("begin %s %d/%d: %s %s %v", resource, fence, seq, r.Decision, r.Detail, err)
	}
	c := storetest.Answer(in.Ref())
	c.Now, c.KeepReceipts = now, keep
	if _, err := s.Commit(ctx, c); err != nil {
		tb.Fatalf("commit %s %d/%d: %v", resource, fence, seq, err)
	}
}

// The counts bucket equals the receipts stored after commits that trim,
// commits that do not, compactions by number and by age, a new fence, and
// a reopen.
func TestReceiptCountsInStep(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fence.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t0 := storetest.T0
	checkCounts(t, s.db, "new file")
	for i := range 3 {
		res := "r" + strconv.Itoa(i)
		for seq := uint64(1); seq <= 10; seq++ {
			beginCommit(t, s, res, 1, seq, 3, t0)
		}
	}
	if got := checkCounts(t, s.db, "commits with KeepReceipts 3"); !maps.Equal(got, map[string]uint64{"r0": 3, "r1": 3, "r2": 3}) {
		t.Fatalf("counts %v, want 3 each", got)
	}
	for seq := uint64(11); seq <= 14; seq++ {
		beginCommit(t, s, "r0", 1, seq, 0, t0.Add(time.Hour))
	}
	beginCommit(t, s, "r1", 2, 1, 0, t0.Add(time.Hour))
	checkCounts(t, s.db, "commits without trim, a new fence")
	if _, err := s.Compact(ctx, store.CompactInput{Now: t0.Add(time.Hour), MaxPerResource: 2, MaxDeletes: 3}); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, s.db, "a compaction by number, cut by MaxDeletes")
	if _, err := s.Compact(ctx, store.CompactInput{Now: t0.Add(time.Hour), MaxPerResource: 2, MaxDeletes: 100}); err != nil {
		t.Fatal(err)
	}
	if got := checkCounts(t, s.db, "a compaction by number"); !maps.Equal(got, map[string]uint64{"r0": 2, "r1": 2, "r2": 2}) {
		t.Fatalf("counts %v, want 2 each", got)
	}
	if _, err := s.Compact(ctx, store.CompactInput{Now: t0.Add(3 * time.Hour), MaxAge: time.Hour, MaxDeletes: 100}); err != nil {
		t.Fatal(err)
	}
	// The newest receipt of a resource's highest fence is kept, whatever
	// its age (store.PlanCompaction): r2 keeps one.
	got := checkCounts(t, s.db, "a compaction by age")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if again := checkCounts(t, s.db, "reopen"); !maps.Equal(again, got) {
		t.Fatalf("counts %v after reopen, %v before", again, got)
	}
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, n := range got {
		total += int(n)
	}
	if st.Receipts != total {
		t.Fatalf("stats: %d receipts, counts sum to %d", st.Receipts, total)
	}
}

// A malformed count is found, not trusted: a value other than 8 bytes, or
// a stored zero (a count of none is no key), is ErrCorrupt, to compaction
// and to Stats alike.
func TestMalformedCountIsCorrupt(t *testing.T) {
	for _, bad := range [][]byte{{1, 2, 3}, make([]byte, 8)} {
		s := openWith(t, Options{})
		beginCommit(t, s, "r", 1, 1, 0, storetest.T0)
		beginCommit(t, s, "r", 1, 2, 0, storetest.T0)
		if err := s.db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucketCounts).Put([]byte("r"), bad) }); err != nil {
			t.Fatal(err)
		}
		_, err := s.Compact(context.Background(), store.CompactInput{Now: storetest.T0, MaxPerResource: 1, MaxDeletes: 10})
		if !errors.Is(err, store.ErrCorrupt) {
			t.Fatalf("compaction with count %x: %v, want ErrCorrupt", bad, err)
		}
		if _, err := s.Stats(context.Background()); !errors.Is(err, store.ErrCorrupt) {
			t.Fatalf("stats with count %x: %v, want ErrCorrupt", bad, err)
		}
	}
}

// The count follows keys, not calls: a receipt stored again under its key
// is counted once, and deleting one that is not stored counts nothing out.
func TestCountFollowsKeys(t *testing.T) {
	s := openWith(t, Options{})
	ctx := context.Background()
	rc := store.Receipt{ID: "rcpt-1", OpRef: store.OpRef{Resource: "r", Fence: 1, Root: "root-1", Seq: 1}, OperationID: "root-1/1",
		AcceptedAt: storetest.T0, Source: store.SourceCommit}
	other := rc
	other.OpRef.Seq, other.OperationID = 2, "root-1/2"
	err := s.Update(ctx, "test", func(tx store.Tx) error {
		for _, r := range []store.Receipt{rc, rc, other, rc} {
			if err := tx.PutReceipt(r); err != nil {
				return err
			}
		}
		gone := rc
		gone.OpRef.Seq, gone.OperationID = 9, "root-1/9"
		return tx.DeleteReceipt(gone.Stamp())
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := checkCounts(t, s.db, "puts again and a delete of none"); !maps.Equal(got, map[string]uint64{"r": 2}) {
		t.Fatalf("counts %v, want r: 2", got)
	}
	err = s.Update(ctx, "test", func(tx store.Tx) error {
		if err := tx.DeleteReceipt(rc.Stamp()); err != nil {
			return err
		}
		return tx.DeleteReceipt(other.Stamp())
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := checkCounts(t, s.db, "deletes"); len(got) != 0 {
		t.Fatalf("counts %v, want none (no key for zero)", got)
	}
}
