package guard_test

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/guard"
	"github.com/fencegate/fencegate/store/memory"
	storeredis "github.com/fencegate/fencegate/store/redis"
	"github.com/fencegate/fencegate/store/storetest"
)

// BenchmarkGuardedBeginCommit: one op = Begin (PROCEED) + Commit of the
// next segment through the guard, from one goroutine per resource (1, then
// 64 resources), the same loop as every backend's BenchmarkBeginCommit.
// Over store/memory it isolates the guard's own cost (its record read and
// its durable checkpoint writes); over a real redis-server (loopback, no
// persistence) it is what the sidecar's redis backend pays per write.
func BenchmarkGuardedBeginCommit(b *testing.B) {
	inners := []struct {
		name string
		open func(b *testing.B) store.Store
	}{
		{"memory", func(*testing.B) store.Store { return memory.New(memory.Options{}) }},
		{"redis", func(b *testing.B) store.Store {
			srv := redistest.Start(b)
			s, err := storeredis.Open(context.Background(), storeredis.Options{Addr: srv.Addr()})
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
	}
	for _, inner := range inners {
		for _, n := range []int{1, 64} {
			b.Run("inner="+inner.name+"/resources="+strconv.Itoa(n), func(b *testing.B) {
				g, err := guard.Wrap(inner.open(b), filepath.Join(b.TempDir(), "checkpoints"))
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = g.Close() })
				b.ReportAllocs()
				b.ResetTimer()
				storetest.BeginCommitLoop(b, g, "bench-", n, b.N)
				b.StopTimer()
				c := g.Counters()
				b.ReportMetric(float64(c.Writes)/float64(b.N), "cp-writes/op")
				b.ReportMetric(float64(c.TxCommits)/float64(b.N), "tx-commits/op")
			})
		}
	}
}
