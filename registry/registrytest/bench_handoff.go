package registrytest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/clock/clocktest"
	"github.com/fencegate/fencegate/registry"
)

// BenchHandoff measures a lock hand-off: from the start of a release on
// holder to the grant of the acquire waiting on waiter (the same Registry
// for the in-process hand-off, another process's for the one across
// processes). waiterClock is waiter's clock, a fake one nobody advances,
// so the waiter's timers (the wait's deadline, the holder's expiry) never
// fire: every hand-off is a wake-up by the release's commit (in-process)
// or by its notification (across processes), never by a timer or a poll.
// It reports the latency percentiles in µs (p50-µs, p99-µs).
func BenchHandoff(b *testing.B, holder, waiter *registry.Registry, waiterClock *clocktest.Clock) {
	b.Helper()
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	type outcome struct {
		res registry.Result
		at  time.Time
		err error
	}
	// Latency is measured on the wall clock (the waiter's own clock is
	// the fake one nobody advances).
	real := clock.Real()
	done := make(chan outcome, 1)
	armed := waiterClock.Armed()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		held, err := holder.Acquire(ctx, registry.AcquireRequest{Resource: "bench/handoff", Owner: "alice", RequestID: fmt.Sprintf("a-%d", i), TTL: time.Minute})
		if err != nil {
			b.Fatalf("acquire by the holder: %v", err)
		}
		go func() {
			res, err := waiter.Acquire(ctx, registry.AcquireRequest{Resource: "bench/handoff", Owner: "bob", RequestID: fmt.Sprintf("b-%d", i), TTL: time.Minute, Wait: 30 * time.Second})
			done <- outcome{res, real.Now(), err}
		}()
		// The wait's deadline and the holder's expiry timer: it waits.
		armed += 2
		if !waiterClock.WaitArmed(ctx, armed) {
			b.Fatal("the waiter did not start waiting")
		}
		start := real.Now()
		if _, err := holder.Release(ctx, "alice", held.View.Lease.Lease); err != nil {
			b.Fatalf("release by the holder: %v", err)
		}
		o := <-done
		if o.err != nil {
			b.Fatalf("waiting acquire: %v", o.err)
		}
		lat = append(lat, o.at.Sub(start))
		if _, err := waiter.Release(ctx, "bob", o.res.View.Lease.Lease); err != nil {
			b.Fatalf("release by the waiter: %v", err)
		}
	}
	b.StopTimer()
	reportLatencies(b, lat)
}
