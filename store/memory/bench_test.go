package memory_test

import (
	"strconv"
	"testing"

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
