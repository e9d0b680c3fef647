package clock

import "time"

// Real returns the process's clock: time.Now, time.NewTimer and
// time.NewTicker.
func Real() Clock { return realClock{} }

// Monotonic returns a clock that reads the process's monotonic clock,
// anchored at the wall time of the call: a step of the wall clock while the
// process runs neither advances nor sets back its Now. Its timers and
// tickers are Real's.
func Monotonic() Clock { return monotonicClock{boot: time.Now()} }

type realClock struct{}

// Now is time.Now.
func (realClock) Now() time.Time { return time.Now() }

// NewTimer is time.NewTimer.
func (realClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

// NewTicker is time.NewTicker.
func (realClock) NewTicker(d time.Duration) Ticker { return realTicker{time.NewTicker(d)} }

type monotonicClock struct {
	realClock
	boot time.Time
}

// Now is the anchor plus the monotonic time elapsed since it.
func (m monotonicClock) Now() time.Time { return m.boot.Add(time.Since(m.boot)) }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

type realTicker struct{ t *time.Ticker }

func (r realTicker) C() <-chan time.Time   { return r.t.C }
func (r realTicker) Stop()                 { r.t.Stop() }
func (r realTicker) Reset(d time.Duration) { r.t.Reset(d) }
