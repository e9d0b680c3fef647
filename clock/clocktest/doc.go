// Package clocktest provides a manual clock.Clock for tests and the
// deterministic simulation: time moves only when Advance is called, and
// the timers and tickers that come due fire then, in deadline order.
package clocktest
