package bolt

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

// BenchmarkBeginCommit: one op = Begin (PROCEED) + Commit of the next
// segment, from one goroutine per resource (1, then 64 resources), default
// options (GroupCommit), fsync on. The same benchmark, by the same name,
// runs on every backend (store/memory, store/bolt, store/redis).
func BenchmarkBeginCommit(b *testing.B) {
	for _, n := range []int{1, 64} {
		b.Run(fmt.Sprintf("resources=%d", n), func(b *testing.B) {
			s := openWith(b, Options{})
			b.ReportAllocs()
			b.ResetTimer()
			storetest.BeginCommitLoop(b, s, "bench-", n, b.N)
		})
	}
}

// BenchmarkCommitThroughput measures accepted mutations ("commits": one
// Begin + one Commit, two durable store writes) per second with 1 and 64
// concurrent resources, for each grouping. fsyncs/commit is counted, not
// guessed: the store counts committed bbolt write transactions (distinct tx
// IDs seen by OnCommit), and bbolt v1.5.0 issues exactly two fdatasyncs per
// write transaction (data pages, then meta page); file growth adds one more
// sync now and then, which this count leaves out. writes/tx is the mean
// group size.
func BenchmarkCommitThroughput(b *testing.B) {
	for _, g := range []struct {
		name string
		opts Options
	}{
		{"group", Options{Grouping: GroupCommit}},
		{"boltbatch-1ms", Options{Grouping: BoltBatch, MaxBatchDelay: time.Millisecond}},
		{"none", Options{Grouping: NoGrouping}},
	} {
		for _, n := range []int{1, 64} {
			b.Run(fmt.Sprintf("%s/resources=%d", g.name, n), func(b *testing.B) {
				s := openWith(b, g.opts)
				b.ReportAllocs()
				before := s.Counters()
				start := time.Now()
				b.ResetTimer()
				storetest.BeginCommitLoop(b, s, "bench-", n, b.N)
				b.StopTimer()
				elapsed := time.Since(start)
				d := s.Counters()
				tx := float64(d.TxCommits - before.TxCommits)
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "commits/s")
				b.ReportMetric(2*tx/float64(b.N), "fsyncs/commit")
				b.ReportMetric(float64(d.Writes-before.Writes)/tx, "writes/tx")
			})
		}
	}
}

// BenchmarkCompactNothingDue: one op = a Compact with nothing due (the
// retention bound above what every resource holds: the background pass of
// a store that trims at Commit) over 16 resources of 2,000 receipts each.
// It plans in a read-only transaction from each resource's receipt count
// and its oldest receipt.
func BenchmarkCompactNothingDue(b *testing.B) {
	s := openWith(b, Options{})
	ctx := context.Background()
	const resources, receipts = 16, 2000
	fillReceipts(b, s, resources, receipts)
	in := store.CompactInput{Now: storetest.T0, MaxPerResource: 2 * receipts, MaxDeletes: 100}
	b.ReportAllocs()
	for b.Loop() {
		res, err := s.Compact(ctx, in)
		if err != nil || res.Receipts != 0 {
			b.Fatalf("%+v, %v", res, err)
		}
	}
}

// BenchmarkBeginCommitTrim: BenchmarkBeginCommit's loop with trim at
// Commit (KeepReceipts 100, as the sidecar passes retention's
// maxPerResource): once a resource holds 100 receipts, every Commit also
// deletes its oldest one, in its own transaction.
func BenchmarkBeginCommitTrim(b *testing.B) {
	const resources, keep = 64, 100
	s := openWith(b, Options{})
	ctx := context.Background()
	b.ReportAllocs()
	var wg sync.WaitGroup
	errs := make(chan error, resources)
	per := (b.N + resources - 1) / resources
	b.ResetTimer()
	for i := range resources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := storetest.Attempt("bench-"+strconv.Itoa(i), 1, 1, "payload")
			ans := storetest.Answer(in.Ref())
			ans.KeepReceipts = keep
			for seq := uint64(1); seq <= uint64(per); seq++ {
				in.Seq, ans.Seq = seq, seq
				if r, err := s.Begin(ctx, in); err != nil || r.Decision != store.DecisionProceed {
					errs <- fmt.Errorf("begin: %s %v", r.Decision, err)
					return
				}
				if _, err := s.Commit(ctx, ans); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// BenchmarkStats: one op = a Stats over 64 resources of 1,000 receipts
// each (the sidecar's default retention at 64 resources), which the
// sidecar reads after each compaction pass to refresh its gauges. It sums
// the counts bucket; a walk of the receipts bucket (bbolt's Bucket.Stats)
// would read every page of the file.
func BenchmarkStats(b *testing.B) {
	s := openWith(b, Options{})
	ctx := context.Background()
	const resources, receipts = 64, 1000
	fillReceipts(b, s, resources, receipts)
	b.ReportAllocs()
	for b.Loop() {
		st, err := s.Stats(ctx)
		if err != nil || st.Receipts != resources*receipts {
			b.Fatalf("%+v, %v", st, err)
		}
	}
}

// fillReceipts stores receipts receipts of fence 1 on each of resources
// resources (bench-0, bench-1, ...), one write transaction per resource.
func fillReceipts(b *testing.B, s *Store, resources, receipts int) {
	b.Helper()
	ctx := context.Background()
	for i := range resources {
		res := "bench-" + strconv.Itoa(i)
		err := s.Update(ctx, "fill", func(tx store.Tx) error {
			in := storetest.Attempt(res, 1, uint64(receipts), "p")
			if err := tx.PutRecord(store.Record{Resource: res, HighestFence: 1, Root: in.Root, LastSeq: uint64(receipts), AcceptedAt: storetest.T0}); err != nil {
				return err
			}
			for seq := uint64(1); seq <= uint64(receipts); seq++ {
				ref := store.OpRef{Resource: res, Fence: 1, Root: in.Root, Seq: seq}
				ans := storetest.Answer(ref)
				rc := store.Receipt{ID: store.ReceiptID(ref, in.PayloadDigest), OpRef: ref, OperationID: ref.OperationID(),
					PayloadDigest: in.PayloadDigest, GrantDigest: in.GrantDigest, Owner: in.Owner, BackendStatus: 201,
					Response: ans.Response, AcceptedAt: storetest.T0, Source: store.SourceCommit}
				if err := tx.PutReceipt(rc); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
