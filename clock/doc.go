// Package clock is fencegate's one source of time. Every component (the
// registry, the sidecar, the SDK, the command) takes a Clock as a
// dependency instead of calling time.Now, time.NewTimer and the like, so
// that tests and the deterministic simulation can drive time by hand with
// clocktest.Clock. Real returns the process's clock.
//
// Outside this package, non-test code never reads time directly: a test
// of this package scans the module and fails on any call of time.Now,
// time.Since, time.Until, time.After, time.AfterFunc, time.NewTimer,
// time.NewTicker, time.Tick or time.Sleep elsewhere.
//
// The package uses only the standard library, so the SDK may import it.
package clock
