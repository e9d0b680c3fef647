package registrytest

import (
	"context"
	"testing"
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/clock/clocktest"
)

// realClock is the process's clock: the suite bounds its waits for
// goroutines in real time (the registry's own time is a clocktest.Clock).
var realClock = clock.Real()

// eventually polls cond every millisecond of real time until it holds or
// limit passes.
func eventually(limit time.Duration, cond func() bool) bool {
	deadline := realClock.Now().Add(limit)
	for {
		if cond() {
			return true
		}
		if realClock.Now().After(deadline) {
			return false
		}
		clock.Sleep(realClock, time.Millisecond, nil)
	}
}

// waitFor fails t when cond does not hold within the liveness limit.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if !eventually(livenessLimit, cond) {
		t.Fatalf("gave up after %s waiting for %s", livenessLimit, what)
	}
}

// waitArmed waits (in real time, up to limit) until c has armed at least n
// timers in all, and reports whether it had.
func waitArmed(ctx context.Context, c *clocktest.Clock, n int, limit time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	return c.WaitArmed(ctx, n)
}

// pause sleeps d of real time.
func pause(d time.Duration) { clock.Sleep(realClock, d, nil) }
