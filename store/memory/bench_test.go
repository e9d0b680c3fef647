package memory_test

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/store"

	"github.com/fencegate/fencegate/store/storetest"
)

// BenchmarkBeginCommit: one op = Begin (PROCEED) + Commit of the next
// segment, from one goroutine per resource (1, then 64 resources). The
// same benchmark, by the same name, runs on every backend (store/memory,
// store/bolt, store/redis), so benchstat can set them side by side:
//
//	go test ./store/memory -run '^$' -bench BeginCommit -benchmem -count 6 > memory.txt
func BenchmarkBeginCommit(b *testing.B) {
	for _, n := range []int{1, 64} {
		b.Run("resources="+strconv.Itoa(n), func(b *testing.B) {
			s := newStore(b)
			b.ReportAllocs()
			b.ResetTimer()
			storetest.BeginCommitLoop(b, s, "bench-", n, b.N)
		})
	}
}

// BenchmarkRetainedReceipts: the heap a full retention keeps, 64 resources
// of 1,000 receipts each (the product's retention.maxPerResource), each
// with a 1 KiB body and three headers as a sidecar stores them. It reports
// the live heap and heap objects per receipt after a GC, and the time of a
// forced GC over that heap (what the receipts cost every cycle of the
// sidecar's collector). One op stores the whole retention.
//
//	go test ./store/memory -run '^$' -bench RetainedReceipts -benchtime 3x
func BenchmarkRetainedReceipts(b *testing.B) {
	const resources, perResource = 64, 1000
	body := []byte(strings.Repeat("x", 1024))
	ctx := context.Background()
	var heap, objects, gc float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		var before runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		b.StartTimer()
		s := newStore(b)
		for r := 0; r < resources; r++ {
			res := "bench/" + strconv.Itoa(r)
			for seq := uint64(1); seq <= perResource; seq++ {
				in := storetest.Attempt(res, 1, seq, "p"+strconv.FormatUint(seq, 10))
				if got, err := s.Begin(ctx, in); err != nil || got.Decision != store.DecisionProceed {
					b.Fatalf("Begin: %v %v", got.Decision, err)
				}
				c := storetest.Answer(in.Ref())
				c.Response.Body = body
				c.Response.Header["Location"] = []string{"/v1/items/" + res}
				if _, err := s.Commit(ctx, c); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.StopTimer()
		var after runtime.MemStats
		start := time.Now()
		runtime.GC()
		gc += float64(time.Since(start).Microseconds())
		runtime.ReadMemStats(&after)
		heap += float64(after.HeapAlloc) - float64(before.HeapAlloc)
		objects += float64(after.HeapObjects) - float64(before.HeapObjects)
		runtime.KeepAlive(s)
		b.StartTimer()
	}
	n := float64(b.N) * resources * perResource
	b.ReportMetric(heap/n, "heap-B/receipt")
	b.ReportMetric(objects/n, "objects/receipt")
	b.ReportMetric(gc/float64(b.N), "gc-µs")
}
