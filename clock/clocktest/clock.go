package clocktest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/fencegate/fencegate/clock"
)

// Start is the time a Clock made by New(time.Time{}) starts at:
// 2030-03-17T17:46:40Z, a whole millisecond.
var Start = time.UnixMilli(1_900_000_000_000).UTC()

// Clock is a manual clock.Clock. Time moves only by Advance (or
// AdvanceTo), which fires every timer and ticker that comes due, in order
// of deadline (ties in the order they were armed), each sending its
// deadline. A timer armed with d <= 0 fires at once, before NewTimer or
// Reset returns. A ticker's channel holds one tick: ticks due while it is
// full are dropped, as time.Ticker drops them for a slow receiver. Stop and
// Reset follow the time package (Go 1.23 and later): after they return, no
// stale value is received. A Clock is safe for concurrent use and, given
// the same calls in the same order, behaves the same every time.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	events  []*event // armed timers and tickers, in arming order
	seq     uint64   // arming counter: the tie-break between equal deadlines
	armed   int
	changed chan struct{} // closed (and replaced) whenever the state changes
}

var _ clock.Clock = (*Clock)(nil)

// event is a timer (period 0) or a ticker.
type event struct {
	when   time.Time
	seq    uint64
	period time.Duration
	ch     chan time.Time
	active bool
}

// New returns a Clock reading start (Start when start is zero).
func New(start time.Time) *Clock {
	if start.IsZero() {
		start = Start
	}
	return &Clock{now: start, changed: make(chan struct{})}
}

// Now returns the clock's current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a timer that fires once the clock reaches Now()+d.
func (c *Clock) NewTimer(d time.Duration) clock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := &event{ch: make(chan time.Time, 1)}
	c.arm(e, d)
	return &timer{c: c, e: e}
}

// NewTicker returns a ticker that fires every d of the clock's time. It
// panics when d <= 0, as time.NewTicker does.
func (c *Clock) NewTicker(d time.Duration) clock.Ticker {
	if d <= 0 {
		panic("clocktest: non-positive interval for NewTicker")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := &event{ch: make(chan time.Time, 1), period: d}
	c.arm(e, d)
	return &ticker{c: c, e: e}
}

// Advance moves the clock forward by d (d < 0 is ignored: the clock never
// goes back), firing what comes due on the way.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.advanceTo(c.now.Add(max(d, 0)))
}

// AdvanceTo moves the clock forward to t (a t before Now is ignored),
// firing what comes due on the way.
func (c *Clock) AdvanceTo(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.advanceTo(t)
	}
}

// Next is the earliest deadline of an armed timer or ticker; ok is false
// when none is armed.
func (c *Clock) Next() (t time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.earliest(); e != nil {
		return e.when, true
	}
	return time.Time{}, false
}

// Pending counts the armed timers (neither fired nor stopped) and the
// running tickers.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.events)
}

// Armed counts every arming so far: each NewTimer, NewTicker and Reset.
func (c *Clock) Armed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.armed
}

// WaitPending blocks until at least n timers and tickers are pending, or
// ctx is done; it reports whether they were. It polls nothing: it wakes on
// every change of the clock.
func (c *Clock) WaitPending(ctx context.Context, n int) bool {
	return c.wait(ctx, func() bool { return c.Pending() >= n })
}

// WaitArmed blocks until Armed is at least n, or ctx is done; it reports
// whether it was.
func (c *Clock) WaitArmed(ctx context.Context, n int) bool {
	return c.wait(ctx, func() bool { return c.Armed() >= n })
}

func (c *Clock) wait(ctx context.Context, cond func() bool) bool {
	for {
		c.mu.Lock()
		ch := c.changed
		c.mu.Unlock()
		if cond() {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return cond()
		}
	}
}

// changedLocked wakes the waiters of WaitPending and WaitArmed.
func (c *Clock) changedLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// arm schedules e to fire d from now; a timer with d <= 0 fires at once.
func (c *Clock) arm(e *event, d time.Duration) {
	c.armed++
	c.seq++
	e.seq = c.seq
	e.when = c.now.Add(d)
	defer c.changedLocked()
	if d <= 0 && e.period == 0 {
		send(e.ch, c.now)
		return
	}
	e.active = true
	c.events = append(c.events, e)
}

// disarm unschedules e and drains its channel; it reports whether e was
// armed or its value was still unreceived (what Timer.Stop reports).
func (c *Clock) disarm(e *event) bool {
	pending := e.active
	if e.active {
		e.active = false
		c.remove(e)
	}
	select {
	case <-e.ch:
		pending = true
	default:
	}
	c.changedLocked()
	return pending
}

func (c *Clock) remove(e *event) {
	for i, x := range c.events {
		if x == e {
			c.events = slices.Delete(c.events, i, i+1)
			return
		}
	}
}

// earliest is the armed event with the smallest (deadline, arming) order.
func (c *Clock) earliest() *event {
	var first *event
	for _, e := range c.events {
		if first == nil || e.when.Before(first.when) || (e.when.Equal(first.when) && e.seq < first.seq) {
			first = e
		}
	}
	return first
}

// advanceTo fires, in order, every event due by target, then sets the
// clock to target.
func (c *Clock) advanceTo(target time.Time) {
	for {
		e := c.earliest()
		if e == nil || e.when.After(target) {
			break
		}
		if e.when.After(c.now) {
			c.now = e.when
		}
		sent := send(e.ch, e.when)
		switch {
		case e.period == 0:
			e.active = false
			c.remove(e)
		case sent:
			e.when = e.when.Add(e.period)
		default:
			// The channel is full: every tick due by target would be
			// dropped too; skip to the first one after it.
			e.when = e.when.Add(e.period * (target.Sub(e.when)/e.period + 1))
		}
	}
	c.now = target
	c.changedLocked()
}

// send delivers t unless the channel is full (a slow ticker receiver); it
// reports whether it did.
func send(ch chan time.Time, t time.Time) bool {
	select {
	case ch <- t:
		return true
	default:
		return false
	}
}

// timer is a clock.Timer of a Clock.
type timer struct {
	c *Clock
	e *event
}

func (t *timer) C() <-chan time.Time { return t.e.ch }

func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	return t.c.disarm(t.e)
}

func (t *timer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	pending := t.c.disarm(t.e)
	t.c.arm(t.e, d)
	return pending
}

// ticker is a clock.Ticker of a Clock.
type ticker struct {
	c *Clock
	e *event
}

func (t *ticker) C() <-chan time.Time { return t.e.ch }

func (t *ticker) Stop() {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.c.disarm(t.e)
}

func (t *ticker) Reset(d time.Duration) {
	if d <= 0 {
		panic("clocktest: non-positive interval for Ticker.Reset")
	}
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.c.disarm(t.e)
	t.e.period = d
	t.c.arm(t.e, d)
}
