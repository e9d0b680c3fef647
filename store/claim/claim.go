package claim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/clock"
)

// startSlack bounds the registry calls of the start-up claim beyond its
// wait of one claim TTL.
const startSlack = 10 * time.Second

// Options say what to claim.
type Options struct {
	// Client talks to the registry as the sidecar's store identity.
	Client *client.Client
	// Service is store.service; Resource its claim resource
	// (store.ClaimResource()).
	Service  string
	Resource string
	// TTL is the claim lease's TTL.
	TTL time.Duration
	// Backend names the local store's backend, for messages.
	Backend string
	Logger  *zap.Logger
}

// Claim is a local store's claim on its service. While its Holder is not
// HELD (EXPIRED, OWNERSHIP_UNKNOWN, RELEASED) Held returns an error and a
// guarded store refuses to begin mutations.
type Claim struct {
	reg      *client.Client
	service  string
	resource string
	ttl      time.Duration
	log      *zap.Logger

	mu     sync.Mutex
	holder *client.Holder

	releaseOnce sync.Once
}

// Take claims the service at the registry, waiting up to one claim TTL
// for another sidecar's claim to end. It fails when another sidecar
// still holds it.
func Take(o Options) (*Claim, error) {
	log := o.Logger
	if log == nil {
		log = zap.NewNop()
	}
	c := &Claim{
		reg: o.Client, service: o.Service, resource: o.Resource, ttl: o.TTL,
		log: log.With(zap.String("service", o.Service), zap.String("claim", o.Resource)),
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.ttl+startSlack)
	defer cancel()
	h, err := c.reg.Hold(ctx, c.resource, client.WithTTL(c.ttl), client.WithWait(c.ttl))
	if errors.Is(err, client.ErrLeaseHeld) {
		return nil, fmt.Errorf("claim: store.service %q is claimed by another sidecar (the registry lease on %q is held): a local %s store serves one replica only; stop the other sidecar, or use store.backend redis for several replicas: %w",
			c.service, c.resource, o.Backend, err)
	}
	if err != nil {
		return nil, fmt.Errorf("claim: claiming store.service %q at the registry (lease on %q): %w", c.service, c.resource, err)
	}
	c.holder = h
	c.log.Info("claimed the service for this sidecar's local store", zap.String("lease", h.LeaseID()))
	return c, nil
}

// Holder is the Holder of the latest claim.
func (c *Claim) Holder() *client.Holder {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.holder
}

// Held returns nil while this sidecar knows it holds its claim.
func (c *Claim) Held() error {
	if err := c.Holder().Usable(); err != nil {
		return fmt.Errorf("claim: store.service %q is not claimed by this sidecar (a local store serves one replica only; writes are refused until the claim is held again): %w", c.service, err)
	}
	return nil
}

// Run logs every loss of the claim and, once the lease ended (EXPIRED,
// RELEASED behind this sidecar's back), claims the service again, until
// ctx ends; it returns ctx's error. It does not release the claim
// (Release does, once the store is closed).
func (c *Claim) Run(ctx context.Context) error {
	for {
		h := c.Holder()
		st, changed := h.Watch()
		if !st.Usable() {
			c.log.Error("LOST the claim on the service: this sidecar refuses every write (STORE_UNAVAILABLE, nothing forwarded) until it holds the claim again; "+
				"reads and passed requests go on and /readyz stays 200 (the claim lives in the registry, whose outage must not take every pod out of its Service): "+
				"watch fencegate_proxy_store_claim_held; the claim is taken again once the lease has ended",
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
func (c *Claim) reclaim(ctx context.Context) bool {
	retry := clock.Real().NewTicker(max(c.ttl/2, 10*time.Millisecond))
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-retry.C():
		}
		// Not cut short by ctx: a claim taken while Run stops is released
		// by Release like any other.
		hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.ttl+startSlack)
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
		return true // Run watches h; Release releases it
	}
}

// Release releases the claim, so that the next sidecar of the service (a
// restarted pod) starts at once; once Run returned (or never ran), after
// the store closed. A failed release is logged, not returned: the claim
// then expires within its TTL and the next sidecar waits for that. Only
// the first call does anything.
func (c *Claim) Release() {
	c.releaseOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.ttl+startSlack)
		defer cancel()
		if err := c.Holder().Release(ctx); err != nil {
			c.log.Error("releasing the claim on the service failed; the next sidecar waits for it to expire", zap.Error(err))
			return
		}
		c.log.Info("released the claim on the service")
	})
}
