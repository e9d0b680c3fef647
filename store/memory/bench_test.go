package memory_test

import (
	"strconv"
	"testing"

	"github.com/fencegate/fencegate/store/storetest"
)

// BenchmarkBeginCommit: one op = Begin (PROCEED) + Commit of the next
// segment on one resource.
func BenchmarkBeginCommit(b *testing.B) {
	s := newStore(b)
	b.ReportAllocs()
	b.ResetTimer()
	storetest.BeginCommitLoop(b, s, "bench-", 1, b.N)
}

// BenchmarkBeginCommitConcurrent: the same from 64 goroutines, one resource
// each.
func BenchmarkBeginCommitConcurrent(b *testing.B) {
	for _, n := range []int{64} {
		b.Run("resources="+strconv.Itoa(n), func(b *testing.B) {
			s := newStore(b)
			b.ReportAllocs()
			b.ResetTimer()
			storetest.BeginCommitLoop(b, s, "bench-", n, b.N)
		})
	}
}
