package etcd_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock/clocktest"
	"github.com/fencegate/fencegate/internal/etcdtest"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/registrytest"
)

// TestReplicaClockStepped is issue 24's test of the registry's time across
// replicas (registry/time.go): two registry replicas on one three-member
// etcd, each on its own member; base is the true time, A reads it, B's
// wall clock is base stepped back 800 ms (within the default 1 s budget),
// then forward by an hour.
//
// Stepped back: a lease whose expiry A's committed decisions passed is
// never HELD again at B, B refuses to renew it, and B's grant is signed at
// or after the registry's time. Stepped forward: B's own grants carry its
// clock, but A's grant and proof never go more than the budget past A's
// clock, and A, now behind the registry's time, still grants, above every
// fence issued.
func TestReplicaClockStepped(t *testing.T) {
	if testing.Short() {
		t.Skip("three etcd processes")
	}
	c := etcdtest.Start(t, 3)
	k := registrytest.NewKeys(t)
	base := clocktest.New(time.Time{})
	bClock := registrytest.NewSteppedClock(base)
	a := newRegistry(t, open(t, c.Member(0).Endpoint()), k, base)
	b := newRegistry(t, open(t, c.Member(1).Endpoint()), k, bClock)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const ttl = 2 * time.Second
	budget := registry.DefaultMaxClockSkew
	acquire := func(reg *registry.Registry, resource, owner, id string) registry.Result {
		t.Helper()
		res, err := reg.Acquire(ctx, registry.AcquireRequest{Resource: resource, Owner: owner, RequestID: id, TTL: ttl})
		if err != nil {
			t.Fatalf("acquire %s by %s: %v", resource, owner, err)
		}
		return res
	}
	status := func(reg *registry.Registry, lease string) registry.Result {
		t.Helper()
		st, err := reg.Status(ctx, registry.LeaseQuery{Lease: lease})
		if err != nil {
			t.Fatalf("status of %s: %v", lease, err)
		}
		return st
	}

	// Stepped back by 800 ms.
	bClock.Step(-(budget - 200*time.Millisecond))
	held := acquire(a, "step/r1", "owner-a", "s-1")
	base.Advance(ttl + 100*time.Millisecond) // A: past the expiry; B: 700 ms before it
	acquire(a, "step/r2", "owner-x", "s-2")  // commits A's time
	if st := status(a, held.View.Lease.Lease); st.View.State != fencegate.StateExpired {
		t.Fatalf("A reads its expired lease as %s", st.View.State)
	}
	aNow := base.Now().UnixMilli()
	if st := status(b, held.View.Lease.Lease); st.View.State != fencegate.StateExpired || int64(st.StatusClaims.IssuedAt) < aNow {
		t.Errorf("B reads the lease A found expired as %s, proof iat %d before A's time %d", st.View.State, st.StatusClaims.IssuedAt, aNow)
	}
	if res, err := b.Renew(ctx, "owner-a", held.View.Lease.Lease, ttl); !errors.Is(err, registry.ErrNotHeld) {
		t.Errorf("B renewed the lease A found expired: %v (expires %d)", err, res.View.Lease.ExpiresAt)
	}
	g := acquire(b, "step/r1", "owner-b", "s-3")
	if l := g.View.Lease; l.IssuedAt < aNow || l.Fence <= held.View.Lease.Fence {
		t.Errorf("B's grant: iat %d before the registry's time %d, or fence %d not above %d", l.IssuedAt, aNow, l.Fence, held.View.Lease.Fence)
	}

	// Stepped forward by an hour.
	bClock.Step(time.Hour)
	ahead := acquire(b, "step/r3", "owner-b", "s-4")
	if want := bClock.Now().UnixMilli(); ahead.View.Lease.IssuedAt != want {
		t.Errorf("B's own grant iat %d, want its clock %d", ahead.View.Lease.IssuedAt, want)
	}
	limit := base.Now().Add(budget).UnixMilli()
	ag := acquire(a, "step/r4", "owner-a", "s-5")
	if l := ag.View.Lease; l.IssuedAt > limit || l.ExpiresAt > limit+ttl.Milliseconds() || int64(ag.StatusClaims.IssuedAt) > limit {
		t.Errorf("A's grant after B's step: iat %d exp %d proof iat %d, beyond A's clock plus the budget (%d) and the TTL", l.IssuedAt, l.ExpiresAt, ag.StatusClaims.IssuedAt, limit)
	}
	if st := status(a, ahead.View.Lease.Lease); int64(st.StatusClaims.IssuedAt) > limit {
		t.Errorf("A's proof of B's grant: iat %d beyond A's clock plus the budget (%d)", st.StatusClaims.IssuedAt, limit)
	}
	base.Advance(ttl) // past B's grant on step/r1
	if next := acquire(a, "step/r1", "owner-c", "s-6"); next.View.Lease.Fence <= g.View.Lease.Fence {
		t.Errorf("A behind the registry's time granted fence %d after %d", next.View.Lease.Fence, g.View.Lease.Fence)
	}
}
