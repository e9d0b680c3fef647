package authn

import (
	"sync"
	"time"

	"github.com/fencegate/fencegate/clock"
)

// TimeBound is a lower bound on the current time learned from the
// registry, for a sidecar whose clock lags the registry's by more than
// trust.clockSkew.
//
// A reading of the registry's clock (a verified proof's iat, the Now of
// the registry's answer to a store anchor call) was within clockSkew of
// the true time, so the true time was at least that reading minus
// clockSkew when it arrived, and at least that plus what the sidecar's
// clock has measured since (its monotonic reading: a wall-clock step
// changes nothing). Expiry and age of proofs are judged at the later of
// the sidecar's clock and this bound (verify.StatusPolicy.NotBefore), so a
// lagging sidecar sees a proof's window close when it closes, not
// clockSkew plus its lag later. The future check (iat <= now + clockSkew)
// keeps the sidecar's clock, so the bound only ever refuses more. Only the
// registry teaches it: an authentic proof (an old one replayed teaches
// nothing new; a later iat cannot be forged) or an answer of the registry
// on the sidecar's own connection to it. The store anchor's calls, made at
// start and then for every forwarded write, keep it fresh in proof mode
// too, where no request brings the present otherwise.
//
// A TimeBound is safe for concurrent use; the zero value is not: use
// NewTimeBound.
type TimeBound struct {
	clk  clock.Clock
	skew time.Duration

	mu sync.Mutex
	// floor was a lower bound on the time at the local reading at; zero
	// before any reading.
	floor, at time.Time
}

// NewTimeBound is a bound with no reading yet, on the sidecar's clock clk
// (nil: the real one), for a registry within skew of the true time.
func NewTimeBound(clk clock.Clock, skew time.Duration) *TimeBound {
	if clk == nil {
		clk = clock.Real()
	}
	return &TimeBound{clk: clk, skew: skew}
}

// ObserveRegistryTime notes a reading t of the registry's clock, made now
// (the answer just arrived).
func (b *TimeBound) ObserveRegistryTime(t time.Time) {
	if t.IsZero() {
		return
	}
	b.observe(t, b.clk.Now())
}

// observe notes a registry clock reading t that arrived at local time now.
func (b *TimeBound) observe(t, now time.Time) {
	f := t.Add(-b.skew)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.at.IsZero() || f.After(b.floor.Add(now.Sub(b.at))) {
		b.floor, b.at = f, now
	}
}

// bound is the lower bound on the time at local time now (zero before any
// reading).
func (b *TimeBound) bound(now time.Time) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.at.IsZero() {
		return time.Time{}
	}
	return b.floor.Add(now.Sub(b.at))
}

// Behind is how far the sidecar's clock is behind the bound now (0 when it
// is not): by more than clockSkew behind the registry's.
func (b *TimeBound) Behind() time.Duration { return b.behind(b.clk.Now()) }

func (b *TimeBound) behind(now time.Time) time.Duration {
	if l := b.bound(now); !l.IsZero() && l.After(now) {
		return l.Sub(now)
	}
	return 0
}
