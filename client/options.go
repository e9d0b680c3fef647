package client

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/fencegate/fencegate/clock"
)

// HoldOption configures Client.Hold.
type HoldOption func(*holdConfig) error

type holdConfig struct {
	ttl            time.Duration
	wait           time.Duration
	waitChunk      time.Duration
	requestID      string
	userRequestID  bool
	opClass        string
	renewFraction  float64
	jitter         float64
	jitterSet      bool
	safetyMargin   time.Duration
	marginSet      bool
	attemptTimeout time.Duration
	retryInterval  time.Duration
	clock          clock.Clock
	random         func() float64
	onTransition   []func(Transition)
	lifetime       context.Context
	noBackground   bool // WithoutBackground (manual.go)
}

// Defaults of Hold.
const (
	// DefaultTTL is the lease TTL Hold asks for when WithTTL is not given.
	DefaultTTL = 10 * time.Second
	// DefaultRenewFraction: renew once this fraction of the TTL has passed
	// since the last confirmation was asked for.
	DefaultRenewFraction = 1.0 / 3
	// DefaultJitter spreads renewals by up to ±10% of their interval.
	DefaultJitter = 0.1
	// DefaultWaitChunk bounds one waiting acquire; longer waits are made of
	// several (the registry's own bound, maxWait, defaults to 60 s).
	DefaultWaitChunk = 30 * time.Second
)

// WithTTL sets the lease TTL asked for at acquire and every renewal
// (default DefaultTTL; the registry bounds it).
func WithTTL(d time.Duration) HoldOption {
	return func(c *holdConfig) error {
		if d <= 0 {
			return fmt.Errorf("client: TTL %s must be positive", d)
		}
		c.ttl = d
		return nil
	}
}

// WithWait makes Hold block up to d for the current holder to release or
// expire, using the registry's waiting acquire (the registry hands the
// resource to the longest waiter the moment it frees). The context's
// deadline bounds the wait too. Without it Hold fails at once with
// ErrLeaseHeld when the resource is held. The wait is not taken from the
// lease: d may be far longer than the TTL, and the Holder Hold returns
// has (nearly) its whole TTL ahead (see Hold).
func WithWait(d time.Duration) HoldOption {
	return func(c *holdConfig) error {
		if d < 0 {
			return fmt.Errorf("client: wait %s must not be negative", d)
		}
		c.wait = d
		return nil
	}
}

// WithWaitChunk bounds a single waiting acquire request (default
// DefaultWaitChunk); keep it at or below the registry's maxWait.
func WithWaitChunk(d time.Duration) HoldOption {
	return func(c *holdConfig) error {
		if d <= 0 {
			return fmt.Errorf("client: wait chunk %s must be positive", d)
		}
		c.waitChunk = d
		return nil
	}
}

// WithRequestID sets the acquire's request ID (default: random). Every
// retry of the acquire reuses it; a lost answer is recovered by looking it
// up. Reusing the request ID of an earlier Hold returns that Hold's grant.
func WithRequestID(id string) HoldOption {
	return func(c *holdConfig) error { c.requestID = id; return nil }
}

// WithOpClass sets the operation class (default the registry's, "write").
func WithOpClass(class string) HoldOption {
	return func(c *holdConfig) error { c.opClass = class; return nil }
}

// WithRenewFraction renews once fraction f (0 < f < 1) of the TTL has
// passed since the last confirmation was asked for (default 1/3).
func WithRenewFraction(f float64) HoldOption {
	return func(c *holdConfig) error {
		if f <= 0 || f >= 1 {
			return fmt.Errorf("client: renew fraction %v must be in (0, 1)", f)
		}
		c.renewFraction = f
		return nil
	}
}

// WithJitter spreads each renewal by up to ±f of its interval (0 <= f < 1,
// default 0.1), so that many workers do not renew in lockstep.
func WithJitter(f float64) HoldOption {
	return func(c *holdConfig) error {
		if f < 0 || f >= 1 {
			return fmt.Errorf("client: jitter %v must be in [0, 1)", f)
		}
		c.jitter, c.jitterSet = f, true
		return nil
	}
}

// WithSafetyMargin sets how long before the lease's conservative local
// expiry (time the confirmation was asked for + remaining TTL) the Holder
// stops producing effects (default TTL/10, at least 1 ms). It absorbs clock
// rate differences and the time a request spends on its way.
func WithSafetyMargin(d time.Duration) HoldOption {
	return func(c *holdConfig) error {
		if d < 0 {
			return fmt.Errorf("client: safety margin %s must not be negative", d)
		}
		c.safetyMargin, c.marginSet = d, true
		return nil
	}
}

// WithAttemptTimeout bounds every registry call the Holder makes on its
// own (renewals, status reads, lookups; default TTL/3). A call that runs
// out has an uncertain outcome.
func WithAttemptTimeout(d time.Duration) HoldOption {
	return func(c *holdConfig) error {
		if d <= 0 {
			return fmt.Errorf("client: attempt timeout %s must be positive", d)
		}
		c.attemptTimeout = d
		return nil
	}
}

// WithRetryInterval sets how often the Holder asks the registry again while
// ownership is unknown, and how often Hold retries a lookup (default TTL/10,
// between 10 ms and 2 s; jittered).
func WithRetryInterval(d time.Duration) HoldOption {
	return func(c *holdConfig) error {
		if d <= 0 {
			return fmt.Errorf("client: retry interval %s must be positive", d)
		}
		c.retryInterval = d
		return nil
	}
}

// WithClock sets the Holder's clock (default clock.Real()). The local clock
// is only ever a safety brake: it can take a lease out of use, never put it
// back (only the registry's answers do). Inject a clocktest.Clock in tests.
func WithClock(c clock.Clock) HoldOption {
	return func(h *holdConfig) error { h.clock = c; return nil }
}

// WithRandom sets the jitter source, returning values in [0, 1); it must
// be safe for concurrent use (default math/rand/v2).
func WithRandom(r func() float64) HoldOption {
	return func(h *holdConfig) error { h.random = r; return nil }
}

// WithOnTransition calls f on every state change, in order, from a
// goroutine of the Holder's (never while the Holder holds a lock). f must
// not block for long: later transitions wait for it. Hold's first call is
// the transition into REQUESTED.
func WithOnTransition(f func(Transition)) HoldOption {
	return func(c *holdConfig) error { c.onTransition = append(c.onTransition, f); return nil }
}

// WithLifetime ties the Holder to ctx: when ctx ends, the Holder stops
// renewing and releases the lease (within the attempt timeout). Hold's own
// context only bounds the acquire; without this option the lease is kept
// until Release.
func WithLifetime(ctx context.Context) HoldOption {
	return func(c *holdConfig) error { c.lifetime = ctx; return nil }
}

func (c *holdConfig) setDefaults() {
	if c.ttl == 0 {
		c.ttl = DefaultTTL
	}
	if c.waitChunk == 0 {
		c.waitChunk = DefaultWaitChunk
	}
	if c.renewFraction == 0 {
		c.renewFraction = DefaultRenewFraction
	}
	if !c.jitterSet {
		c.jitter = DefaultJitter
	}
	if !c.marginSet {
		c.safetyMargin = max(c.ttl/10, time.Millisecond)
	}
	if c.attemptTimeout == 0 {
		c.attemptTimeout = c.ttl / 3
	}
	if c.retryInterval == 0 {
		c.retryInterval = min(max(c.ttl/10, 10*time.Millisecond), 2*time.Second)
	}
	if c.clock == nil {
		c.clock = clock.Real()
	}
	if c.random == nil {
		c.random = defaultRandom
	}
}

// defaultRandom is the default jitter source: uniform in [0, 1).
func defaultRandom() float64 { return rand.Float64() }
