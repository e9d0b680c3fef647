package registrytest

import (
	"sync"
	"testing"
	"time"
)

// Start is the time a Clock made by NewClock(time.Time{}) starts at:
// 2030-03-17T17:46:40Z, a whole millisecond.
var Start = time.UnixMilli(1_900_000_000_000).UTC()

// Clock is a manual clock for registry.Options Clock and After. Time moves
// only when Advance is called; a channel returned by After fires when
// Advance reaches its deadline (at once when the duration is <= 0). It is
// safe for concurrent use.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers []clockTimer
	armed  int
}

type clockTimer struct {
	at time.Time
	ch chan time.Time
}

// NewClock returns a Clock reading start (Start when start is zero).
func NewClock(start time.Time) *Clock {
	if start.IsZero() {
		start = Start
	}
	return &Clock{now: start}
}

// Now returns the clock's current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After returns a channel that receives the clock's time once the clock
// has been advanced by at least d; with d <= 0 it is ready at once.
func (c *Clock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armed++
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.timers = append(c.timers, clockTimer{at: c.now.Add(d), ch: ch})
	return ch
}

// Advance moves the clock forward by d (d < 0 is ignored: the clock never
// goes back) and fires every timer whose deadline is reached.
func (c *Clock) Advance(d time.Duration) {
	if d < 0 {
		d = 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, tm := range c.timers {
		if tm.at.After(c.now) {
			kept = append(kept, tm)
			continue
		}
		tm.ch <- c.now
	}
	clear(c.timers[len(kept):])
	c.timers = kept
}

// Pending counts the timers that have not fired yet.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Armed counts every After call so far, fired or not.
func (c *Clock) Armed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.armed
}

// WaitArmed waits (in real time, up to limit) until After has been called
// at least n times in all, and reports whether it was.
func (c *Clock) WaitArmed(n int, limit time.Duration) bool {
	return eventually(limit, func() bool { return c.Armed() >= n })
}

// eventually polls cond every millisecond of real time until it holds or
// limit passes.
func eventually(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
}

// waitFor fails t when cond does not hold within the liveness limit.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if !eventually(livenessLimit, cond) {
		t.Fatalf("gave up after %s waiting for %s", livenessLimit, what)
	}
}
