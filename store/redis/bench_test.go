package redis

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/store/storetest"
)

// roundTrips is a go-redis hook counting what goes over the wire: one per
// command sent alone, one per pipeline (a MULTI/EXEC block included).
type roundTrips struct{ n atomic.Int64 }

func (h *roundTrips) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (h *roundTrips) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h *roundTrips) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmds)
	}
}

// benchStore opens a store over a fresh server with a round-trip counter;
// default server persistence (none) unless args say otherwise.
func benchStore(b *testing.B, args ...string) (*Store, *roundTrips) {
	srv := redistest.Start(b, args...)
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
	b.Cleanup(func() { _ = c.Close() })
	h := &roundTrips{}
	c.AddHook(h)
	s, err := New(c, Options{})
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Ping(context.Background()).Err(); err != nil {
		b.Fatal(err)
	}
	return s, h
}

// BenchmarkBeginCommit: one op = Begin (PROCEED) + Commit of the next
// segment, from one goroutine per resource (1, then 64 resources) sharing
// one client, over loopback, no persistence. The same benchmark, by the
// same name, runs on every backend (store/memory, store/bolt,
// store/redis). round-trips/op counts what crossed the wire per accepted
// write (Begin and Commit: one step script each, plus a read pipeline
// for a resource the Store has not read yet); server-us/op is the CPU
// time redis-server spent per accepted write (INFO cpu, user + sys);
// stale/op and late/op the steps the script refused, for a read that no
// longer held and for the decision's time alone (each one more round
// trip).
func BenchmarkBeginCommit(b *testing.B) {
	beginCommit(b, "--appendonly", "no")
}

// BenchmarkBeginCommitDurable: the same with appendfsync always, the
// setting whose acknowledged writes survive a crash (see the fault test).
func BenchmarkBeginCommitDurable(b *testing.B) {
	beginCommit(b, "--appendonly", "yes", "--appendfsync", "always")
}

func beginCommit(b *testing.B, args ...string) {
	for _, n := range []int{1, 64} {
		b.Run("resources="+strconv.Itoa(n), func(b *testing.B) {
			s, h := benchStore(b, args...)
			b.ReportAllocs()
			cpu0 := serverCPU(b, s.c)
			b.ResetTimer()
			storetest.BeginCommitLoop(b, s, "bench-", n, b.N)
			b.StopTimer()
			b.ReportMetric(float64(h.n.Load())/float64(b.N), "round-trips/op")
			b.ReportMetric((serverCPU(b, s.c)-cpu0).Seconds()*1e6/float64(b.N), "server-us/op")
			b.ReportMetric(float64(s.retried.Load())/float64(b.N), "stale/op")
			b.ReportMetric(float64(s.refusedTime.Load())/float64(b.N), "late/op")
		})
	}
}

// serverCPU is the CPU time the server has used (INFO cpu: used_cpu_user
// plus used_cpu_sys).
func serverCPU(b *testing.B, c goredis.UniversalClient) time.Duration {
	info, err := c.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\r\n") {
		k, v, _ := strings.Cut(line, ":")
		if k == "used_cpu_user" || k == "used_cpu_sys" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatalf("INFO cpu %s: %v", line, err)
			}
			total += f
		}
	}
	return time.Duration(total * float64(time.Second))
}
