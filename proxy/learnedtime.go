package proxy

import (
	"sync"
	"time"
)

// learnedTime is a lower bound on the current time learned from the
// registry's own proofs, for a sidecar whose clock lags the registry's by
// more than trust.clockSkew.
//
// A proof's iat is the registry's clock when it signed the proof; with the
// registry within clockSkew of the true time, the true time was at least
// iat - clockSkew then, and at least that plus what the local clock has
// measured since the proof was seen (its monotonic reading: a wall-clock
// step changes nothing). Expiry and age are judged at the later of the
// local clock and this bound (verify.StatusPolicy.NotBefore), so a lagging
// sidecar sees a proof's window close when it closes, not clockSkew plus
// its lag later. The future check (iat <= now + clockSkew) keeps the local
// clock, so the bound only ever refuses more. Only authentic proofs teach
// it: an attacker can replay an old proof (which teaches nothing new) but
// cannot sign one with a later iat.
type learnedTime struct {
	mu sync.Mutex
	// floor was a lower bound on the time at the local reading at; zero
	// before any proof.
	floor, at time.Time
}

// observe notes an authentic proof issued at iat (registry clock), seen at
// local time now.
func (l *learnedTime) observe(iat time.Time, skew time.Duration, now time.Time) {
	f := iat.Add(-skew)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.at.IsZero() || f.After(l.floor.Add(now.Sub(l.at))) {
		l.floor, l.at = f, now
	}
}

// bound is the lower bound on the time at local time now (zero before any
// proof was observed).
func (l *learnedTime) bound(now time.Time) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.at.IsZero() {
		return time.Time{}
	}
	return l.floor.Add(now.Sub(l.at))
}

// behind is how far the local clock at now is behind the bound (0 when it
// is not): more than clockSkew behind the registry.
func (l *learnedTime) behind(now time.Time) time.Duration {
	if b := l.bound(now); !b.IsZero() && b.After(now) {
		return b.Sub(now)
	}
	return 0
}
