package client_test

import (
	"sync"
	"testing"
	"time"
)

// fakeClock is a manual clock: time moves only by Advance.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	at   time.Time
	ch   chan time.Time
	done bool
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 7, 19, 9, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) (<-chan time.Time, func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{at: c.now.Add(d), ch: make(chan time.Time, 1)}
	if d <= 0 {
		t.done = true
		t.ch <- c.now
	} else {
		c.timers = append(c.timers, t)
	}
	stop := func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !t.done
		t.done = true
		return was
	}
	return t.ch, stop
}

// Advance moves the clock and fires every timer that is due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	keep := c.timers[:0]
	for _, t := range c.timers {
		switch {
		case t.done:
		case !t.at.After(c.now):
			t.done = true
			t.ch <- c.now
		default:
			keep = append(keep, t)
		}
	}
	c.timers = keep
}

// pending is the number of timers not yet fired or stopped.
func (c *fakeClock) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.done {
			n++
		}
	}
	return n
}

// advanceIdle waits until something (the Holder's keeper) waits on a timer
// of the clock, then advances it: a step taken while the keeper is busy
// would land before its next timer exists.
func (c *fakeClock) advanceIdle(t *testing.T, d time.Duration) {
	t.Helper()
	waitFor(t, 5*time.Second, "the keeper to wait on the clock", func() bool { return c.pending() > 0 })
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
		if c.pending() > 0 {
			c.Advance(step)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
