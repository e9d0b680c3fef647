package registrytest

import (
	"sync/atomic"
	"time"

	"github.com/fencegate/fencegate/clock"
)

// SteppedClock is a registry process's wall clock stepped away from the
// true time: base (the test's clock, shared with the other processes)
// plus an offset that Step changes at any moment, as an NTP step or an
// operator's date command would. Timers and tickers run on base: a step
// moves what Now reads, not how long a duration lasts.
type SteppedClock struct {
	base   clock.Clock
	offset atomic.Int64
}

// NewSteppedClock returns base, not stepped yet.
func NewSteppedClock(base clock.Clock) *SteppedClock { return &SteppedClock{base: base} }

// Step sets the clock to read base's time plus offset (negative: behind).
func (c *SteppedClock) Step(offset time.Duration) { c.offset.Store(int64(offset)) }

// Now is base's time plus the offset.
func (c *SteppedClock) Now() time.Time {
	return c.base.Now().Add(time.Duration(c.offset.Load()))
}

// NewTimer is base's.
func (c *SteppedClock) NewTimer(d time.Duration) clock.Timer { return c.base.NewTimer(d) }

// NewTicker is base's.
func (c *SteppedClock) NewTicker(d time.Duration) clock.Ticker { return c.base.NewTicker(d) }
