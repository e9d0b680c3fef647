package client

import (
	"context"
	"errors"
	"fmt"

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
