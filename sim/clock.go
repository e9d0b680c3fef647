package sim

import (
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/clock/clocktest"
)

// simClock is the virtual clock every part of a round reads: a
// clocktest.Clock that only the event loop advances, with one change.
// The simulation runs each request to completion on one goroutine, so a
// component that arms a timer and then blocks on it (the sidecar waiting
// for a resource another mutation holds in flight, for its busyWait) would
// wait for ever: nothing else runs to advance the clock. NewTimer therefore
// lets the waiter's virtual time pass at once: it advances the clock by d
// and returns a timer that has fired. The waiting is still virtual time
// spent (the event loop sees the clock moved, and runs later events no
// earlier than that), and no event can happen in the middle of it, which
// is the single-threaded model: a request holds the sidecar while it waits.
type simClock struct{ *clocktest.Clock }

var _ clock.Clock = simClock{}

func newSimClock() simClock { return simClock{clocktest.New(time.Time{})} }

// NewTimer advances the virtual clock by d and returns a fired timer.
func (c simClock) NewTimer(d time.Duration) clock.Timer {
	c.Clock.Advance(d)
	return c.Clock.NewTimer(0)
}

// offsetClock is one sidecar's clock: the round's virtual clock off by a
// fixed offset from the registry's (which reads the virtual clock itself).
// Its timers are the virtual clock's: a wait of d is d of the round's time.
type offsetClock struct {
	base simClock
	off  time.Duration
}

var _ clock.Clock = offsetClock{}

func (c offsetClock) Now() time.Time                       { return c.base.Now().Add(c.off) }
func (c offsetClock) NewTimer(d time.Duration) clock.Timer { return c.base.NewTimer(d) }
func (c offsetClock) NewTicker(d time.Duration) clock.Ticker {
	return c.base.NewTicker(d)
}
