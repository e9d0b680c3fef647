package bolt

import (
	"fmt"
	"testing"
	"time"

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
