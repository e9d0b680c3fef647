package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/store"
)

// claimStartSlack bounds the registry calls of the start-up claim beyond
// its wait of one claim TTL.
const claimStartSlack = 10 * time.Second

// claim is a local store's claim on its service: a lease on
// store.ClaimResource() at the registry, renewed in the background by a
// client.Holder. While the Holder is not HELD (EXPIRED, OWNERSHIP_UNKNOWN,
// RELEASED) the sidecar refuses writes; Run, the claim's loop, logs every
// loss and, when the lease ended, claims the service again. Server.Run
// owns the loop and releases the claim after the store closed.
type claim struct {
	reg      *client.Client
	service  string
	resource string
	ttl      time.Duration
	log      *zap.Logger

	mu     sync.Mutex
	holder *client.Holder

	releaseOnce sync.Once
}

// claimService claims cfg.Store.Service at the registry, waiting up to
// one claim TTL for another sidecar's claim to end (a restarted pod's old
// claim expires within it). It fails when another sidecar still holds it.
func claimService(cfg Config, reg *client.Client, log *zap.Logger) (*claim, error) {
	c := &claim{
		reg: reg, service: cfg.Store.Service, resource: cfg.Store.ClaimResource(), ttl: cfg.Store.ClaimTTL,
		log: log.With(zap.String("service", cfg.Store.Service), zap.String("claim", cfg.Store.ClaimResource())),
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.ttl+claimStartSlack)
	defer cancel()
	h, err := reg.Hold(ctx, c.resource, client.WithTTL(c.ttl), client.WithWait(c.ttl))
	if errors.Is(err, client.ErrLeaseHeld) {
		return nil, fmt.Errorf("server: store.service %q is claimed by another sidecar (the registry lease on %q is held): a local %s store serves one replica only; stop the other sidecar, or use store.backend redis for several replicas: %w",
			c.service, c.resource, cfg.Store.Backend, err)
	}
	if err != nil {
		return nil, fmt.Errorf("server: claiming store.service %q at the registry (lease on %q): %w", c.service, c.resource, err)
	}
	c.holder = h
	c.log.Info("claimed the service for this sidecar's local store", zap.String("lease", h.LeaseID()))
	return c, nil
}

// current is the Holder of the latest claim.
func (c *claim) current() *client.Holder {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.holder
}

// held returns nil while this sidecar knows it holds its claim.
func (c *claim) held() error {
	if err := c.current().Usable(); err != nil {
		return fmt.Errorf("server: store.service %q is not claimed by this sidecar (a local store serves one replica only; writes are refused until the claim is held again): %w", c.service, err)
	}
	return nil
}

// Run logs every loss of the claim and, once the lease ended (EXPIRED,
// RELEASED behind this sidecar's back), claims the service again, until
// ctx ends; it returns ctx's error. It does not release the claim
// (release does, once the store is closed).
func (c *claim) Run(ctx context.Context) error {
	for {
		h := c.current()
		st, changed := h.Watch()
		if !st.Usable() {
			c.log.Error("LOST the claim on the service: this sidecar refuses every write (STORE_UNAVAILABLE) and is not ready until it holds the claim again",
				zap.String("state", st.String()), zap.Error(h.Err()))
		}
		if st.Final() {
			if !c.reclaim(ctx) {
				return ctx.Err()
			}
			continue
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// reclaim tries to claim the service again every half claim TTL until it
// succeeds (true) or ctx ends (false).
func (c *claim) reclaim(ctx context.Context) bool {
	retry := clock.Real().NewTicker(max(c.ttl/2, 10*time.Millisecond))
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-retry.C():
		}
		// Not cut short by ctx: a claim taken while Run stops is released
		// by release like any other.
		hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.ttl+claimStartSlack)
		h, err := c.reg.Hold(hctx, c.resource, client.WithTTL(c.ttl))
		cancel()
		if err != nil {
			c.log.Error("claiming the service again failed; writes stay refused", zap.Error(err))
			continue
		}
		c.mu.Lock()
		c.holder = h
		c.mu.Unlock()
		c.log.Info("claimed the service again; writes are accepted", zap.String("lease", h.LeaseID()))
		return true // Run watches h; release releases it
	}
}

// release releases the claim, so that the next sidecar of the service (a
// restarted pod) starts at once; once Run returned (or never ran), after
// the store closed. A failed release is logged, not returned: the claim
// then expires within its TTL and the next sidecar waits for that.
func (c *claim) release() {
	c.releaseOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.ttl+claimStartSlack)
		defer cancel()
		if err := c.current().Release(ctx); err != nil {
			c.log.Error("releasing the claim on the service failed; the next sidecar waits for it to expire", zap.Error(err))
			return
		}
		c.log.Info("released the claim on the service")
	})
}

// claimedStore is a local store that refuses to begin a mutation while
// its sidecar does not hold the claim on its service: fail closed, the
// pipeline answers STORE_UNAVAILABLE and forwards nothing. Closing it
// closes the store only (Server.Run releases the claim after it).
type claimedStore struct {
	store.Store
	claim *claim
}

// Begin refuses while the claim is not held, else begins on the store.
func (s *claimedStore) Begin(ctx context.Context, in store.BeginInput) (store.BeginResult, error) {
	if err := s.claim.held(); err != nil {
		return store.BeginResult{}, err
	}
	return s.Store.Begin(ctx, in)
}

// Unwrap returns the local store.
func (s *claimedStore) Unwrap() store.Store { return s.Store }
