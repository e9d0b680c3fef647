package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/fencegate/fencegate/clock/clocktest"
)

// fakeClock is the Holders' manual clock in these tests: a clocktest.Clock
// with the waits the keeper needs.
type fakeClock struct{ *clocktest.Clock }

func newFakeClock() *fakeClock {
	return &fakeClock{clocktest.New(time.Date(2026, 7, 19, 9, 0, 0, 0, time.UTC))}
}

// advanceIdle waits until something (the Holder's keeper) waits on a timer
// of the clock, then advances it: a step taken while the keeper is busy
// would land before its next timer exists.
func (c *fakeClock) advanceIdle(t *testing.T, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if !c.WaitPending(ctx, 1) {
		t.Fatal("timed out waiting for the keeper to wait on the clock")
	}
	c.Advance(d)
}

// stepUntil advances the clock by step whenever something waits on it,
// until cond holds: robust to steps that land while the keeper is busy.
func (c *fakeClock) stepUntil(t *testing.T, step time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		if c.Pending() > 0 {
			c.Advance(step)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
