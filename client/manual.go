package client

import (
	"context"
	"errors"
	"fmt"
)

// WithoutBackground makes Hold start no goroutine of its own: no keeper
// (so no automatic renewal, no background status reads while ownership is
// unknown, no wake-up at the local deadline) and no proof prefetch (a
// Transport in proof mode reads a new proof when it needs one). The caller
// renews with Holder.Renew and asks with Holder.Check. Every rule of the
// state machine is the same: only registry answers make the lease HELD,
// and the local deadline still takes it out of use, on every look (State,
// Usable, an effect) rather than at the deadline itself. It cannot be
// combined with WithLifetime or WithOnTransition, which need goroutines.
//
// It exists for deterministic drivers, such as the simulation (package
// sim), which run a worker on a virtual clock and must see every place
// its goroutines wait. A worker in production should not use it.
func WithoutBackground() HoldOption {
	return func(c *holdConfig) error { c.noBackground = true; return nil }
}

// Renew renews the lease once, now, as the Holder's keeper does on its
// schedule (the TTL of WithTTL; RENEWING until the answer), and applies
// the registry's answer. It returns the resulting state; an error means
// the renewal's outcome is uncertain (the state is then
// OWNERSHIP_UNKNOWN) or the registry refused it (EXPIRED and the like).
// With the keeper running it is one renewal more; with WithoutBackground
// it is the only way the lease is renewed.
func (h *Holder) Renew(ctx context.Context) (State, error) {
	h.mu.Lock()
	if h.ls.state.Final() || h.releasing {
		st := h.ls.state
		h.mu.Unlock()
		return st, &StateError{State: st, Cause: errors.New("client: the lease is over or being released")}
	}
	h.applyLocked(leaseEvent{kind: leaseRenewSent})
	id := h.ls.lease.Lease
	h.mu.Unlock()
	sent := h.clock.Now()
	l, err := h.c.Renew(ctx, id, h.cfg.ttl)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.observeLocked(opRenew, sent, l, err)
	h.brakeLocked()
	if err != nil {
		return h.ls.state, fmt.Errorf("client: renew: %w", err)
	}
	return h.ls.state, nil
}
