package bolt

import (
	"context"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

func openWith(tb testing.TB, opts Options) *Store {
	s, err := Open(filepath.Join(tb.TempDir(), "fence.db"), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// The other groupings must be just as correct.
func TestConformanceBoltBatch(t *testing.T) {
	storetest.Run(t, func(tb testing.TB) store.Store {
		return openWith(tb, Options{Grouping: BoltBatch, MaxBatchDelay: 200 * time.Microsecond})
	})
}

func TestConformanceNoGrouping(t *testing.T) {
	storetest.Run(t, func(tb testing.TB) store.Store { return openWith(tb, Options{Grouping: NoGrouping}) })
}

// Writes that queue while a transaction is running share the next one.
func TestGroupCommitSharesTransactions(t *testing.T) {
	s := openWith(t, Options{})
	ctx := context.Background()
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	blocked := make(chan error, 1)
	go func() {
		blocked <- s.write(ctx, func(*bbolt.Tx) error {
			once.Do(func() { close(entered) })
			<-release
			return nil
		})
	}()
	<-entered
	before := s.Counters()
	const n = 16
	var wg sync.WaitGroup
	results := make([]store.BeginResult, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = s.Begin(ctx, storetest.Attempt("g"+strconv.Itoa(i), 1, 1, "a"))
		}()
	}
	waitQueued(t, s, n)
	close(release)
	wg.Wait()
	if err := <-blocked; err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if errs[i] != nil || results[i].Decision != store.DecisionProceed {
			t.Fatalf("Begin %d: %s %v", i, results[i].Decision, errs[i])
		}
	}
	d := s.Counters()
	if w, tx := d.Writes-before.Writes, d.TxCommits-before.TxCommits; w != n+1 || tx != 2 {
		t.Fatalf("%d writes in %d transactions; want %d writes in 2 (the blocker's and one group)", w, tx, n+1)
	}
	// Every grouped write is durable and visible.
	for i := range n {
		rec, err := s.Record(ctx, "g"+strconv.Itoa(i))
		if err != nil || rec.InFlight == nil {
			t.Fatalf("record %d: %+v, %v", i, rec, err)
		}
	}
}

// A failing write does not take the rest of its group down.
func TestGroupCommitIsolatesFailures(t *testing.T) {
	s := openWith(t, Options{})
	ctx := context.Background()
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	go func() {
		_ = s.write(ctx, func(*bbolt.Tx) error {
			once.Do(func() { close(entered) })
			<-release
			return nil
		})
	}()
	<-entered
	var wg sync.WaitGroup
	var failErr, panicErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		failErr = s.write(ctx, func(tx *bbolt.Tx) error {
			_ = tx.Bucket(bucketRecords).Put([]byte("junk"), []byte("junk"))
			return store.ErrCorrupt
		})
	}()
	go func() {
		defer wg.Done()
		panicErr = s.write(ctx, func(*bbolt.Tx) error { panic("boom") })
	}()
	const n = 8
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.Begin(ctx, storetest.Attempt("ok"+strconv.Itoa(i), 1, 1, "a"))
		}()
	}
	waitQueued(t, s, n+2)
	close(release)
	wg.Wait()
	if failErr == nil || panicErr == nil {
		t.Fatalf("failing writes returned %v and %v", failErr, panicErr)
	}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Begin %d: %v", i, errs[i])
		}
		if rec, err := s.Record(ctx, "ok"+strconv.Itoa(i)); err != nil || rec.InFlight == nil {
			t.Fatalf("record %d: %+v, %v", i, rec, err)
		}
	}
	if _, err := s.Record(ctx, "junk"); err == nil {
		t.Fatal("the failed write's put survived")
	}
}

// waitQueued waits until n writes wait for the (blocked) committer.
func waitQueued(t *testing.T, s *Store, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(s.group.reqs) < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d writes queued", len(s.group.reqs), n)
		}
		time.Sleep(100 * time.Microsecond)
	}
}
