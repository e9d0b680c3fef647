package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock"
)

// Hold acquires a lease on resource and returns a Holder that keeps it:
// renewing it, and refusing effects as soon as it no longer knows that it
// holds it.
//
// The acquire is safe to retry and to lose:
//   - every attempt of one Hold uses the same request ID;
//   - an answer that is lost (a transport error, a timeout, a 5xx) is
//     recovered only by looking the request ID up (Client.Lookup); when
//     the lookup says the request is unknown, the acquire is sent again,
//     still with the same request ID (the registry grants at most once per
//     request ID);
//   - when the lookup itself is impossible, Hold waits until any grant of
//     the lost attempt must have expired and returns an
//     *AcquireUnknownError (ErrAcquireUnknown); it never starts a second
//     request ID while the first may hold the lease;
//   - when ctx ends while an answer is lost, Hold still looks the request
//     up briefly (WithAttemptTimeout) and releases a grant it finds, so an
//     abandoned Hold does not block the resource for a TTL.
//
// With WithWait, Hold blocks (bounded by the wait and by ctx's deadline)
// on the registry's waiting acquire. Without it, a held resource fails at
// once with ErrLeaseHeld.
//
// The wait for the lock is separate from the lease: waiting does not eat
// the TTL, whatever the wait (WithWait(time.Minute) with WithTTL(10s) is
// fine). The returned Holder is HELD with (nearly) its whole TTL ahead.
// The local deadline counts from when a confirmation was asked for, so
// the grant of a waiting acquire that waited for more than a tenth of
// the TTL leaves too little of it: Hold then reads the lease's status
// before returning, and the deadline counts from that read. If the
// registry does not confirm the lease (every read uncertain until a grant
// never renewed must have expired, or ctx ended), Hold releases the lease
// and returns a *StateError (ErrNotHolding); it never hands out a Holder
// whose first effect would be refused. If the registry answers that the
// lease is already over (it expired between the grant and the read: a
// machine too slow for its TTL), nothing of that grant can run, and Hold
// acquires again under a new request ID, for what is left of the wait
// (once without waiting when none is; up to three grants). Not with
// WithRequestID, whose request ID names the ended grant: then the
// *StateError is in the final state.
func (c *Client) Hold(ctx context.Context, resource string, opts ...HoldOption) (*Holder, error) {
	cfg, err := newHoldConfig(opts)
	if err != nil {
		return nil, err
	}
	h, err := c.obtain(ctx, resource, cfg)
	if err != nil {
		return nil, err
	}
	h.handOut()
	cfg = h.cfg
	if cfg.noBackground {
		close(h.keeperDone) // no keeper: Release has nothing to stop
	} else {
		go h.keep()
	}
	if life := cfg.lifetime; life != nil {
		go func() {
			select {
			case <-life.Done():
				ctx, cancel := context.WithTimeout(context.Background(), cfg.attemptTimeout)
				defer cancel()
				_ = h.Release(ctx)
			case <-h.stop:
			case <-h.done:
			}
		}()
	}
	return h, nil
}

// newHoldConfig applies Hold's options over the defaults and checks that
// they fit together.
func newHoldConfig(opts []HoldOption) (holdConfig, error) {
	var cfg holdConfig
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return holdConfig{}, err
		}
	}
	cfg.setDefaults()
	if cfg.noBackground && (cfg.lifetime != nil || len(cfg.onTransition) > 0) {
		return holdConfig{}, errors.New("client: WithoutBackground cannot be combined with WithLifetime or WithOnTransition")
	}
	if cfg.safetyMargin >= cfg.ttl {
		return holdConfig{}, fmt.Errorf("client: safety margin %s must be below the TTL %s", cfg.safetyMargin, cfg.ttl)
	}
	if cfg.requestID == "" {
		cfg.requestID = newRequestID()
	} else {
		cfg.userRequestID = true
	}
	return cfg, nil
}

// abandon ends a Holder that never got a grant.
func (h *Holder) abandon() {
	defer h.endLife()
	h.stopOnce.Do(func() { close(h.stop); h.keeperStop() })
	close(h.keeperDone)
	h.mu.Lock()
	h.releasing = true
	if h.events != nil {
		h.events.close()
	}
	h.mu.Unlock()
}

func newRequestID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "req-" + hex.EncodeToString(b)
}

// maxLostAcquires bounds the acquires of one Hold that are lost and then
// found not granted by their request ID.
const maxLostAcquires = 5

// uncertain reports whether err leaves an acquire's outcome unknown: any
// error but a definite problem answer of the registry (4xx).
func uncertain(err error) bool {
	var ce *Error
	if errors.As(err, &ce) {
		return ce.StatusCode >= 500
	}
	return true
}

// acquire runs the acquire protocol and returns a HELD lease and the local
// time the request that established it was sent.
func (h *Holder) acquire(ctx context.Context) (*Lease, time.Time, error) {
	cfg := &h.cfg
	clk := h.clock
	var waitUntil time.Time
	if cfg.wait > 0 {
		waitUntil = clk.Now().Add(cfg.wait)
	}
	lost := 0
	for {
		if err := ctx.Err(); err != nil {
			return nil, time.Time{}, fmt.Errorf("client: acquire %s: %w", h.resource, err)
		}
		var chunk time.Duration
		if !waitUntil.IsZero() {
			chunk = min(waitUntil.Sub(clk.Now()), cfg.waitChunk)
			if dl, ok := ctx.Deadline(); ok {
				// Leave time for the answer to come back before ctx ends:
				// a cancelled waiting acquire has an unknown outcome.
				// (A context's deadline is on the process's clock.)
				chunk = min(chunk, clock.Until(clock.Real(), dl)*9/10)
			}
			chunk = chunk.Truncate(time.Millisecond)
			if chunk < time.Millisecond {
				chunk = 0 // one last look, then give up
			}
		}
		actx, cancel := context.WithTimeout(ctx, chunk+cfg.attemptTimeout)
		sent := clk.Now()
		l, err := h.c.Acquire(actx, AcquireRequest{
			Resource: h.resource, RequestID: h.requestID, TTL: cfg.ttl, OpClass: cfg.opClass, Wait: chunk,
		})
		cancel()
		switch {
		case err == nil && l.State == fencegate.StateHeld:
			return l, sent, nil
		case err == nil:
			// The request ID's grant exists but is over: an earlier Hold
			// with this request ID. A new identity needs a new request ID.
			return nil, time.Time{}, &StateError{State: StateExpired, Cause: fmt.Errorf(
				"client: request %s was granted lease %s, which is now %s; use a new request ID", h.requestID, l.Lease, l.State)}
		case errors.Is(err, ErrLeaseHeld):
			if chunk > 0 && clk.Now().Before(waitUntil) && ctx.Err() == nil {
				continue // another waiting round, same request ID
			}
			return nil, time.Time{}, fmt.Errorf("client: acquire %s: %w", h.resource, err)
		case !uncertain(err):
			return nil, time.Time{}, fmt.Errorf("client: acquire %s: %w", h.resource, err)
		}
		// The answer is lost: only the request ID can tell.
		safeAfter := sent.Add(chunk + cfg.ttl + cfg.safetyMargin)
		l, sent2, found, lerr := h.lookup(ctx, safeAfter, err)
		if lerr != nil {
			return nil, time.Time{}, lerr
		}
		if found {
			if l.State == fencegate.StateHeld {
				return l, sent2, nil
			}
			if cfg.userRequestID {
				return nil, time.Time{}, &StateError{State: StateExpired, Cause: fmt.Errorf(
					"client: request %s was granted lease %s, which is now %s; use a new request ID", h.requestID, l.Lease, l.State)}
			}
			// The lost attempt was granted and is over already: the
			// registry confirms nothing of it runs. Start afresh.
			h.requestID = newRequestID()
			h.cfg.requestID = h.requestID
		}
		// Not found: the acquire was not applied (yet); sending it again
		// with the same request ID cannot grant twice.
		if lost++; lost >= maxLostAcquires {
			return nil, time.Time{}, fmt.Errorf("client: acquire %s: %d attempts lost, none granted: %w", h.resource, lost, err)
		}
		if !clock.Sleep(clk, h.jittered(cfg.retryInterval), ctx.Done()) {
			return nil, time.Time{}, fmt.Errorf("client: acquire %s: %w", h.resource, ctx.Err())
		}
	}
}

// lookup recovers a lost acquire answer by its request ID. It retries
// until the registry answers, or until safeAfter (when any grant of the
// lost attempt has expired), or until ctx ends; in the last two cases it
// returns an *AcquireUnknownError. When ctx ends it still tries once more
// with a short detached context and releases a grant it finds.
func (h *Holder) lookup(ctx context.Context, safeAfter time.Time, cause error) (*Lease, time.Time, bool, error) {
	clk := h.clock
	last := cause
	sentAt := safeAfter.Add(-(h.cfg.ttl + h.cfg.safetyMargin))
	for {
		if ctx.Err() != nil {
			if h.cleanup() {
				return nil, time.Time{}, false, fmt.Errorf("client: acquire %s: %w (the registry confirms no grant of it is held)", h.resource, ctx.Err())
			}
			return nil, time.Time{}, false, &AcquireUnknownError{RequestID: h.requestID, SentAt: sentAt, SafeAfter: safeAfter, Err: errors.Join(last, ctx.Err())}
		}
		lctx, cancel := context.WithTimeout(ctx, h.cfg.attemptTimeout)
		sent := clk.Now()
		l, err := h.c.Lookup(lctx, h.requestID)
		cancel()
		switch {
		case err == nil:
			return l, sent, true, nil
		case errors.Is(err, ErrNotFound):
			return nil, time.Time{}, false, nil
		case !uncertain(err):
			return nil, time.Time{}, false, fmt.Errorf("client: look up request %s: %w", h.requestID, err)
		}
		last = err
		now := clk.Now()
		if !now.Before(safeAfter) {
			return nil, time.Time{}, false, &AcquireUnknownError{RequestID: h.requestID, SentAt: sentAt, SafeAfter: safeAfter, Err: last}
		}
		wait := min(h.jittered(h.cfg.retryInterval), safeAfter.Sub(now))
		if !clock.Sleep(clk, wait, ctx.Done()) {
			continue // reports through ctx.Err() above
		}
	}
}

// cleanup is the last chance of an abandoned acquire: look the request up
// once and release what it finds, so the resource is not blocked. It
// reports whether the registry confirmed the grant it found is over.
func (h *Holder) cleanup() bool {
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.attemptTimeout)
	defer cancel()
	l, err := h.c.Lookup(ctx, h.requestID)
	if err != nil {
		return false
	}
	if l.State == fencegate.StateHeld {
		r, err := h.c.Release(ctx, l.Lease)
		return err == nil && r.State != fencegate.StateHeld
	}
	return true
}
