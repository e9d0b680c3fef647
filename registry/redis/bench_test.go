package redis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fencegate/fencegate/clock/clocktest"
	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/registrytest"
)

// BenchmarkHandoffAcrossProcesses measures a lock hand-off between two
// registry processes sharing one Redis (durable settings): from the start
// of a release on registry A to the grant of the acquire waiting on
// registry B, which A's release wakes through Redis pub/sub. B's timers
// are on a fake clock nobody advances, so every hand-off is a wake-up by
// notification (without it B would wait for the holder's expiry).
//
//	go test -run '^$' -bench HandoffAcrossProcesses -benchtime 500x ./registry/redis/
func BenchmarkHandoffAcrossProcesses(b *testing.B) {
	srv := redistest.Start(b, durable...)
	k := registrytest.NewKeys(b)
	beA, beB := open(b, srv.Addr()), open(b, srv.Addr())
	b.Cleanup(func() { beA.Close(); beB.Close() })
	clkB := clocktest.New(time.Time{})
	regA := newRegistry(b, beA, k, clocktest.New(time.Time{}))
	regB := newRegistry(b, beB, k, clkB)
	ctx := context.Background()
	lat := make(latencies, 0, b.N)
	type outcome struct {
		res registry.Result
		at  time.Time
		err error
	}
	done := make(chan outcome, 1)
	armed := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		held, err := regA.Acquire(ctx, registry.AcquireRequest{Resource: "bench/handoff", Owner: "alice", RequestID: fmt.Sprintf("a-%d", i), TTL: time.Minute})
		if err != nil {
			b.Fatalf("acquire on A: %v", err)
		}
		go func() {
			res, err := regB.Acquire(ctx, registry.AcquireRequest{Resource: "bench/handoff", Owner: "bob", RequestID: fmt.Sprintf("b-%d", i), TTL: time.Minute, Wait: 30 * time.Second})
			done <- outcome{res, time.Now(), err}
		}()
		// The wait's deadline and the holder's expiry timer: B waits.
		armed += 2
		if !clkB.WaitArmed(ctx, armed) {
			b.Fatal("B did not start waiting")
		}
		start := time.Now()
		if _, err := regA.Release(ctx, "alice", held.View.Lease.Lease); err != nil {
			b.Fatalf("release on A: %v", err)
		}
		o := <-done
		if o.err != nil {
			b.Fatalf("waiting acquire on B: %v", o.err)
		}
		lat = append(lat, o.at.Sub(start))
		if _, err := regB.Release(ctx, "bob", o.res.View.Lease.Lease); err != nil {
			b.Fatalf("release on B: %v", err)
		}
	}
	b.StopTimer()
	lat.report(b)
}
