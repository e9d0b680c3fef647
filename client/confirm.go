package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fencegate/fencegate/clock"
)

// freshLocked reports whether the lease Hold got is fresh enough to hand
// out as it is: HELD, with all of the usable lease (TTL minus the safety
// margin) ahead of the local deadline but a tenth of the TTL. An acquire
// answered at once is (its round trip is short); a waiting acquire that
// waited for longer is not, because its local deadline counts from when
// the request was sent, not from when the registry granted it.
func (h *Holder) freshLocked() bool {
	h.brakeLocked()
	usable := h.cfg.ttl - h.cfg.safetyMargin
	return h.ls.state == StateHeld && h.ls.deadline.Sub(h.clock.Now()) >= usable-h.cfg.ttl/10
}

// confirm asks the registry for the lease's status until it answers HELD
// (the deadline then counts from this read: the whole TTL left since the
// grant, less the margin), the lease is over, or no confirmation can help
// any more. An uncertain answer is asked again every retry interval, up to
// the TTL (plus the margin) after the grant came back: by then a grant
// that was never renewed has expired. ctx's end stops the retries; the
// first status read is sent even so (bounded by the attempt timeout), so a
// Hold whose context ends as the grant arrives still gets its answer.
func (h *Holder) confirm(ctx context.Context) error {
	until := h.clock.Now().Add(h.cfg.ttl + h.cfg.safetyMargin)
	for {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.cfg.attemptTimeout)
		st, err := h.Check(cctx)
		cancel()
		switch {
		case st.Usable():
			return nil
		case st.Final():
			return &StateError{State: st, Cause: withCause(fmt.Sprintf("client: acquire %s: lease %s ended before Hold could confirm it", h.resource, h.LeaseID()), errOr(err, h.Err()))}
		}
		if !h.clock.Now().Before(until) || ctx.Err() != nil {
			return &StateError{State: st, Cause: withCause(fmt.Sprintf("client: acquire %s: lease %s was granted after a wait, but the registry did not confirm it; Hold releases it",
				h.resource, h.LeaseID()), errOr(ctx.Err(), errOr(err, h.Err())))}
		}
		if !clock.Sleep(h.clock, h.jittered(h.cfg.retryInterval), ctx.Done()) {
			continue // reports ctx's end above, after one more read
		}
	}
}

// errOr is err, or fallback when err is nil.
func errOr(err, fallback error) error {
	if err != nil {
		return err
	}
	return fallback
}

// withCause is an error saying msg, wrapping err when there is one.
func withCause(msg string, err error) error {
	if err == nil {
		return errors.New(msg)
	}
	return fmt.Errorf("%s: %w", msg, err)
}

// discard ends a Holder whose grant Hold does not hand out (its
// confirmation failed): no keeper was started; the lease is released
// (within the attempt timeout; it expires by its TTL otherwise).
func (h *Holder) discard() {
	defer h.endLife()
	close(h.keeperDone)
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.attemptTimeout)
	_ = h.Release(ctx)
	cancel()
	h.mu.Lock()
	if h.events != nil {
		h.events.close()
	}
	h.mu.Unlock()
}

// maxObtains bounds the grants one Hold gets and then finds ended before
// it could confirm them.
const maxObtains = 3

// obtain acquires the lease on resource and, when the grant came back too
// late to use as it is, confirms it (confirm): it returns a Holder whose
// lease is HELD with nearly its whole TTL ahead, not yet handed out. A
// grant that the registry says ended before Hold could confirm it (a
// machine too slow for the TTL: it expired between the grant and the
// status read) is over for certain, so nothing of it can run: obtain
// acquires again under a new request ID, waiting for what is left of the
// wait, or not at all once it is spent (not with WithRequestID's, which
// names that grant). Each attempt is a Holder of
// its own: WithOnTransition's callbacks see the ended one's transitions
// and then the next one's from REQUESTED.
func (c *Client) obtain(ctx context.Context, resource string, cfg holdConfig) (*Holder, error) {
	var waitUntil time.Time
	if cfg.wait > 0 {
		waitUntil = cfg.clock.Now().Add(cfg.wait)
	}
	for n := 1; ; n++ {
		h, err := c.obtainOnce(ctx, resource, cfg)
		var se *StateError
		if err == nil || !errors.As(err, &se) || !se.State.Final() || cfg.userRequestID || n >= maxObtains || ctx.Err() != nil {
			return h, err
		}
		// The rest of the wait; none left: one acquire that does not wait
		// (the lock was had within the wait, and lost to slowness).
		cfg.wait, cfg.requestID = max(clock.Until(cfg.clock, waitUntil), 0), newRequestID()
	}
}

// obtainOnce is one attempt of obtain: one Holder, one request ID.
func (c *Client) obtainOnce(ctx context.Context, resource string, cfg holdConfig) (*Holder, error) {
	h := newHolder(c, resource, cfg)
	if h.events != nil {
		// The callbacks' goroutine: it ends when the state is final or
		// the Holder is abandoned (the dispatcher closed).
		go h.events.run()
	}
	l, sent, err := h.acquire(ctx)
	if err != nil {
		h.abandon()
		return nil, err
	}
	claims, err := GrantClaims(l.Grant)
	if err != nil {
		h.abandon()
		return nil, err
	}
	h.mu.Lock()
	h.grant, h.claims = l.Grant, claims
	h.observeLocked(opAcquire, sent, l, nil)
	fresh := h.freshLocked()
	h.mu.Unlock()
	if !fresh {
		// A waiting acquire: the grant may have been issued long after
		// the request was sent, and the local deadline counts from the
		// send (sent + TTL - margin), so little or none of it is left.
		// Confirm the lease now, before handing the Holder out: waiting
		// for the lock does not eat the lease.
		if err := h.confirm(ctx); err != nil {
			h.discard()
			return nil, err
		}
	}
	return h, nil
}
