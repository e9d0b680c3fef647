package clock

import "time"

// Clock is a source of time: the current instant, timers and tickers.
// Implementations are safe for concurrent use.
type Clock interface {
	// Now is the current time.
	Now() time.Time
	// NewTimer returns a Timer that sends the time on its channel once,
	// after at least d (at once when d <= 0).
	NewTimer(d time.Duration) Timer
	// NewTicker returns a Ticker that sends the time on its channel every
	// d; it drops ticks for a slow receiver. d must be > 0 (it panics
	// otherwise, as time.NewTicker does).
	NewTicker(d time.Duration) Ticker
}

// Timer is a single event, like *time.Timer (with the Go 1.23 semantics: no
// stale value is received after Stop or Reset returns).
type Timer interface {
	// C is the channel the time is sent on.
	C() <-chan time.Time
	// Stop prevents the timer from firing. It reports whether it stopped
	// it (false when the timer had already expired and its value was
	// received, or had been stopped).
	Stop() bool
	// Reset stops the timer and arms it again to fire after d. It reports
	// what Stop would have.
	Reset(d time.Duration) bool
}

// Ticker is a periodic event, like *time.Ticker.
type Ticker interface {
	// C is the channel the ticks are sent on.
	C() <-chan time.Time
	// Stop turns the ticker off; no tick is received after it returns.
	Stop()
	// Reset stops the ticker and restarts it with period d (> 0); the next
	// tick comes d after the call.
	Reset(d time.Duration)
}

// Since is the time elapsed on c since t.
func Since(c Clock, t time.Time) time.Duration { return c.Now().Sub(t) }

// Until is the time left on c until t.
func Until(c Clock, t time.Time) time.Duration { return t.Sub(c.Now()) }

// Sleep waits d on c, or until done is closed (a nil done never is). It
// reports whether d passed.
func Sleep(c Clock, d time.Duration, done <-chan struct{}) bool {
	if d <= 0 {
		return true
	}
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-done:
		return false
	}
}
