package client

import (
	"math/rand/v2"
	"time"
)

// Clock is a Holder's source of time. The local clock is only ever a
// safety brake: it can take a lease out of use, never put it back (only
// the registry's answers do). Inject a fake one in tests with WithClock.
type Clock interface {
	// Now is the current time; only differences between its values are used.
	Now() time.Time
	// NewTimer returns a channel that receives once d has passed, and a
	// function that stops the timer (it reports whether it stopped it
	// before it fired).
	NewTimer(d time.Duration) (<-chan time.Time, func() bool)
}

// realClock is the process's monotonic clock.
type realClock struct{}

// Now is time.Now.
func (realClock) Now() time.Time { return time.Now() }

// NewTimer is time.NewTimer.
func (realClock) NewTimer(d time.Duration) (<-chan time.Time, func() bool) {
	t := time.NewTimer(d)
	return t.C, t.Stop
}

// RealClock returns the process's clock (time.Now, time.NewTimer).
func RealClock() Clock { return realClock{} }

// defaultRandom is the default jitter source: uniform in [0, 1).
func defaultRandom() float64 { return rand.Float64() }

// sleep waits d on clock c, or until done is closed; it reports whether d passed.
func sleep(c Clock, d time.Duration, done <-chan struct{}) bool {
	if d <= 0 {
		return true
	}
	ch, stop := c.NewTimer(d)
	defer stop()
	select {
	case <-ch:
		return true
	case <-done:
		return false
	}
}
