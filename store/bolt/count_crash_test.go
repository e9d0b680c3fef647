//go:build unix

package bolt

import (
	"context"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/fencegate/fencegate/internal/crashtest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

const countCrashEnv = "FENCEGATE_STORE_BOLT_COUNT_CRASH_CHILD"

// TestCountHelperProcess is the child of TestCountsAfterCrash; it does
// nothing in a normal run. It commits on a few resources with trim at
// Commit, and compacts, until killed.
func TestCountHelperProcess(t *testing.T) {
	path := crashtest.Child(t, countCrashEnv)
	fail, report := crashtest.Fail, crashtest.Report
	s, err := Open(path, Options{})
	if err != nil {
		fail("open: %v", err)
	}
	ctx := context.Background()
	for i := range 3 {
		go func() {
			res := "count-" + strconv.Itoa(i)
			for {
				rec, err := s.Record(ctx, res)
				if err != nil && !errors.Is(err, store.ErrNotFound) {
					fail("record: %v", err)
				}
				if m := rec.InFlight; m != nil {
					// Left by the killed predecessor.
					if _, err := s.MarkUnknown(ctx, store.MarkUnknownInput{OpRef: m.Ref(), Now: time.Now()}); err != nil {
						fail("mark unknown: %v", err)
					}
					if _, err := s.Resolve(ctx, store.ResolveInput{OpRef: m.Ref(), Closed: true, Now: time.Now()}); err != nil {
						fail("resolve: %v", err)
					}
					continue
				}
				fence := rec.HighestFence + 1
				for seq := uint64(1); seq <= 12; seq++ {
					in := storetest.Attempt(res, fence, seq, "p")
					in.Now = time.Now()
					in.Deadline, in.QuietAt = in.Now.Add(time.Minute), in.Now.Add(time.Minute)
					if r, err := s.Begin(ctx, in); err != nil || r.Decision != store.DecisionProceed {
						fail("begin: %s %s %v", r.Decision, r.Detail, err)
					}
					c := storetest.Answer(in.Ref())
					c.Now, c.KeepReceipts = time.Now(), 2+i
					if _, err := s.Commit(ctx, c); err != nil {
						fail("commit: %v", err)
					}
					report("C %s %d %d", res, fence, seq)
				}
			}
		}()
	}
	go func() {
		for {
			if _, err := s.Compact(ctx, store.CompactInput{Now: time.Now(), MaxPerResource: 1, MaxDeletes: 2}); err != nil {
				fail("compact: %v", err)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	select {} // until killed
}

// After SIGKILLs at random moments of commits that trim and compactions,
// the counts bucket equals the receipts stored.
func TestCountsAfterCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := filepath.Join(t.TempDir(), "count.db")
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	commits := 0
	for round := range 8 {
		lines, _ := crashtest.Run(t, "TestCountHelperProcess", []string{countCrashEnv + "=" + path}, rng, round%4 == 3, 80*time.Millisecond)
		commits += len(lines)
		db, err := bbolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.View(func(tx *bbolt.Tx) error {
			for err := range tx.Check() {
				return err
			}
			return nil
		}); err != nil {
			t.Fatalf("bbolt consistency check: %v", err)
		}
		if db.View(func(tx *bbolt.Tx) error {
			if tx.Bucket(bucketMeta) == nil {
				return errors.New("killed before the file was made")
			}
			return nil
		}) == nil {
			got := checkCounts(t, db, "round "+strconv.Itoa(round))
			t.Logf("round %d: %d commits reported, counts %v", round, len(lines), got)
		}
		_ = db.Close()
	}
	if commits == 0 {
		t.Fatal("the child never committed anything: the test tested nothing")
	}
}
