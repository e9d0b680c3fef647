package bolt_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fencegate/fencegate/clock/clocktest"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/bolt"
	"github.com/fencegate/fencegate/registry/memory"
	"github.com/fencegate/fencegate/registry/registrytest"
)

// Fsyncs per acquire are not counted here (bbolt's stats have no fsync
// counter); measure them with strace on the benchmark binary:
//
//	go test -c -o /tmp/bolt.test ./registry/bolt/
//	strace -f -c -e trace=fdatasync,fsync /tmp/bolt.test -test.run='^$' -test.bench='^BenchmarkAcquire$' -test.benchtime=1000x
//	strace -f -c -e trace=fdatasync,fsync /tmp/bolt.test -test.run='^$' -test.bench='^BenchmarkAcquire$' -test.benchtime=2000x
//
// and divide the difference of the two counts by 1000 (the difference
// cancels the file creation and the benchmark's warm-up run). bbolt
// fdatasyncs twice per read-write transaction (the data pages, then the
// meta page) plus an fsync when it grows the file, and one acquire is one
// read-write transaction.

// openBoltBench opens a new registry file in a temporary directory (a real
// file system, real fsync) and returns it as a backend and its store.
func openBoltBench(b *testing.B) (registry.Backend, *bolt.Store) {
	b.Helper()
	s, err := bolt.Open(filepath.Join(b.TempDir(), "registry.db"), time.Second)
	if err != nil {
		b.Fatalf("open: %v", err)
	}
	be := registry.NewTxBackend(s)
	b.Cleanup(func() { be.Close() })
	return be, s
}

// latencies collects per-operation durations and reports percentiles.
type latencies []time.Duration

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	s := slices.Clone(l)
	slices.Sort(s)
	at := func(p float64) float64 {
		i := int(p * float64(len(s)-1))
		return float64(s[i].Nanoseconds()) / 1e3
	}
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}

// benchAcquire measures Registry.Acquire granting a lease on a new
// resource each time: one backend transaction and two signatures.
func benchAcquire(b *testing.B, be registry.Backend) {
	k := registrytest.NewKeys(b)
	reg := newRegistry(b, be, k, nil)
	ctx := context.Background()
	lat := make(latencies, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		_, err := reg.Acquire(ctx, registry.AcquireRequest{
			Resource: fmt.Sprintf("bench/r%d", i), Owner: "bench-owner", RequestID: fmt.Sprintf("b-%d", i), TTL: time.Minute,
		})
		lat = append(lat, time.Since(start))
		if err != nil {
			b.Fatalf("acquire: %v", err)
		}
	}
	b.StopTimer()
	lat.report(b)
}

// BenchmarkAcquire measures a granted acquire on bbolt with fsync.
func BenchmarkAcquire(b *testing.B) {
	be, s := openBoltBench(b)
	writesNow := func() int64 {
		st := s.DB().Stats()
		return st.TxStats.GetWrite()
	}
	before := writesNow()
	benchAcquire(b, be)
	writes := writesNow() - before
	b.ReportMetric(float64(writes)/float64(b.N), "pagewrites/op")
}

// BenchmarkAcquireMemory is BenchmarkAcquire on the memory backend.
func BenchmarkAcquireMemory(b *testing.B) {
	be := memory.NewBackend()
	b.Cleanup(func() { be.Close() })
	benchAcquire(b, be)
}

// BenchmarkRenew measures renewing one held lease on bbolt with fsync.
func BenchmarkRenew(b *testing.B) {
	be, _ := openBoltBench(b)
	k := registrytest.NewKeys(b)
	reg := newRegistry(b, be, k, nil)
	ctx := context.Background()
	res, err := reg.Acquire(ctx, registry.AcquireRequest{Resource: "bench/renew", Owner: "bench-owner", RequestID: "renew", TTL: registry.DefaultMaxTTL})
	if err != nil {
		b.Fatalf("acquire: %v", err)
	}
	lat := make(latencies, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		_, err := reg.Renew(ctx, "bench-owner", res.View.Lease.Lease, registry.DefaultMaxTTL)
		lat = append(lat, time.Since(start))
		if err != nil {
			b.Fatalf("renew: %v", err)
		}
	}
	b.StopTimer()
	lat.report(b)
}

// BenchmarkAcquireReleaseParallel: one op = an acquire and a release of a
// resource of its own, from 1 and 16 goroutines on bbolt with fsync (the
// issue-12 figure "acquire+release pairs per second at 16 concurrent",
// without HTTP). Operations arriving together share a transaction.
func BenchmarkAcquireReleaseParallel(b *testing.B) {
	for _, n := range []int{1, 16} {
		b.Run(fmt.Sprintf("concurrent=%d", n), func(b *testing.B) {
			be, s := openBoltBench(b)
			reg := newRegistry(b, be, registrytest.NewKeys(b), nil)
			ctx := context.Background()
			var next atomic.Int64
			w0, tx0 := s.GroupStats()
			b.ReportAllocs()
			b.ResetTimer()
			start, cpu := time.Now(), cpuTime(b)
			var wg sync.WaitGroup
			for w := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; next.Add(1) <= int64(b.N); i++ {
						res, err := reg.Acquire(ctx, registry.AcquireRequest{Resource: fmt.Sprintf("bench/%d", w), Owner: "o", RequestID: fmt.Sprintf("%d-%d", w, i)})
						if err != nil {
							b.Errorf("acquire: %v", err)
							return
						}
						if _, err := reg.Release(ctx, "o", res.View.Lease.Lease); err != nil {
							b.Errorf("release: %v", err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "pairs/s")
			// The process's CPU per pair: what a shared machine's load
			// does not change, unlike pairs/s.
			b.ReportMetric(float64((cpuTime(b)-cpu).Microseconds())/float64(b.N), "cpu-µs/pair")
			w1, tx1 := s.GroupStats()
			b.ReportMetric(float64(w1-w0)/float64(max(tx1-tx0, 1)), "writes/tx")
		})
	}
}

// BenchmarkAnchorBatch measures one anchor request (one transaction, one
// group commit with fsync) of 1 and of 64 BEGIN items on bbolt: the cost a
// sidecar's forwarded mutation adds at the registry, alone and batched.
//
//	go test -run '^$' -bench AnchorBatch -benchtime 500x ./registry/bolt/ ./registry/redis/
func BenchmarkAnchorBatch(b *testing.B) {
	for _, size := range []int{1, 64} {
		b.Run(fmt.Sprintf("items=%d", size), func(b *testing.B) {
			be, _ := openBoltBench(b)
			registrytest.BenchAnchorBatch(b, be, size)
		})
	}
}

// BenchmarkHandoff measures release -> the waiting acquire's grant in one
// registry process on bbolt with fsync (registrytest.BenchHandoff: the
// waiter's timers never fire, so the release's commit wakes it).
//
//	go test -run '^$' -bench Handoff -benchtime 500x ./registry/bolt/ ./registry/redis/
func BenchmarkHandoff(b *testing.B) {
	be, _ := openBoltBench(b)
	clk := clocktest.New(time.Time{})
	reg := newRegistry(b, be, registrytest.NewKeys(b), clk)
	registrytest.BenchHandoff(b, reg, reg, clk)
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
