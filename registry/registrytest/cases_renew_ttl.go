package registrytest

import (
	"bytes"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/registry"
)

// testRenewKeepsTTL checks that a renewal without a TTL extends the lease
// by its own TTL (the ttlMs of its grant), as etcd and Consul keep a
// lease's TTL on a keep-alive, never by the registry's default: a renewal
// must not shorten a long lease. An explicit TTL still applies to its
// renewal (within the registry's and the policy's bounds) without changing
// the lease's own TTL, and the backend refuses a negative TTL.
func testRenewKeepsTTL(t *testing.T, e *env) {
	const res, owner = "renewttl/r1", "owner-a"
	reg := e.registry
	long := 3 * DefaultTTL // longer than the registry's default
	a := e.acquire(t, req(res, owner, "rt-1", long))
	lease := a.View.Lease.Lease
	wantExpiry := func(what string, r registry.Result, ttl time.Duration) {
		t.Helper()
		e.checkResult(t, r)
		if r.View.State != fencegate.StateHeld || r.View.Lease.ExpiresAt != ms(e.clock.Now())+ttl.Milliseconds() {
			t.Errorf("%s: state %s expiresAt %d, want HELD until %d (now + %s)",
				what, r.View.State, r.View.Lease.ExpiresAt, ms(e.clock.Now())+ttl.Milliseconds(), ttl)
		}
		if r.View.Lease.TTLMs != uint64(long.Milliseconds()) || !bytes.Equal(r.Grant, a.Grant) {
			t.Errorf("%s: ttlMs %d (want %d, the grant's), same grant %v", what, r.View.Lease.TTLMs, long.Milliseconds(), bytes.Equal(r.Grant, a.Grant))
		}
	}

	// No TTL: the lease's own, not DefaultTTL.
	e.clock.Advance(DefaultTTL)
	r, err := reg().Renew(e.ctx, owner, lease, 0)
	if err != nil {
		t.Fatalf("renew without a TTL: %v", err)
	}
	wantExpiry("renew without a TTL", r, long)

	// An explicit TTL applies to its renewal only.
	e.clock.Advance(time.Second)
	if r, err = reg().Renew(e.ctx, owner, lease, 2*time.Second); err != nil {
		t.Fatalf("renew with a TTL: %v", err)
	}
	wantExpiry("renew with an explicit TTL", r, 2*time.Second)
	e.clock.Advance(time.Second)
	if r, err = reg().Renew(e.ctx, owner, lease, 0); err != nil {
		t.Fatalf("renew without a TTL after an explicit one: %v", err)
	}
	wantExpiry("renew without a TTL after an explicit one", r, long)
	if st := e.status(t, a); st.View.Lease.ExpiresAt != r.View.Lease.ExpiresAt {
		t.Errorf("status reads expiresAt %d, the renewal answered %d", st.View.Lease.ExpiresAt, r.View.Lease.ExpiresAt)
	}

	// Bad TTLs change nothing, with or without the Registry in front.
	before := e.snapshot(t, res)
	_, err = reg().Renew(e.ctx, owner, lease, -time.Second)
	wantErr(t, "renew with a negative TTL", err, registry.ErrInvalidInput)
	_, err = reg().Renew(e.ctx, owner, lease, MaxTTL+time.Millisecond)
	wantErr(t, "renew with a TTL above the maximum", err, registry.ErrInvalidInput)
	for _, ttl := range []time.Duration{-time.Millisecond, time.Nanosecond} {
		_, err = e.backend().Renew(e.ctx, registry.RenewInput{Lease: lease, Owner: owner, TTL: ttl, Now: e.clock.Now()})
		wantErr(t, "backend renew with TTL "+ttl.String(), err, registry.ErrInvalidInput)
	}
	e.unchanged(t, "refused renewals", before)

	// A lease acquired without a TTL renews by the default it was given.
	d := e.acquire(t, req("renewttl/r2", owner, "rt-2", 0))
	e.clock.Advance(time.Second)
	if r, err = reg().Renew(e.ctx, owner, d.View.Lease.Lease, 0); err != nil {
		t.Fatalf("renew of a default-TTL lease: %v", err)
	}
	e.checkResult(t, r)
	if r.View.Lease.ExpiresAt != ms(e.clock.Now())+DefaultTTL.Milliseconds() {
		t.Errorf("renew of a default-TTL lease: expiresAt %d, want %d", r.View.Lease.ExpiresAt, ms(e.clock.Now())+DefaultTTL.Milliseconds())
	}

	// The policy's bounds apply to a renewal without a TTL too: a lease
	// whose own TTL is within them renews, an explicit TTL beyond them is
	// refused and changes nothing.
	if _, err := reg().PutPolicy(e.ctx, fencegate.Policy{Pattern: "renewttl/pol/*", MinTTLMs: 500, MaxTTLMs: uint64((4 * DefaultTTL).Milliseconds())}); err != nil {
		t.Fatalf("put policy: %v", err)
	}
	p := e.acquire(t, req("renewttl/pol/r3", owner, "rt-3", long))
	e.clock.Advance(time.Second)
	before = e.snapshot(t, "renewttl/pol/r3")
	_, err = reg().Renew(e.ctx, owner, p.View.Lease.Lease, 5*DefaultTTL)
	wantErr(t, "renew above the policy's max TTL", err, registry.ErrPolicyDenied)
	e.unchanged(t, "a renewal the policy refused", before)
	if r, err = reg().Renew(e.ctx, owner, p.View.Lease.Lease, 0); err != nil {
		t.Fatalf("renew without a TTL under a policy: %v", err)
	}
	e.checkResult(t, r)
	if r.View.Lease.ExpiresAt != ms(e.clock.Now())+long.Milliseconds() {
		t.Errorf("renew without a TTL under a policy: expiresAt %d, want %d", r.View.Lease.ExpiresAt, ms(e.clock.Now())+long.Milliseconds())
	}

	// Past its expiry a renewal without a TTL is refused like any other.
	e.clock.Advance(long)
	x, err := reg().Renew(e.ctx, owner, d.View.Lease.Lease, 0)
	wantErr(t, "renew without a TTL after expiry", err, registry.ErrNotHeld)
	if x.View.State != fencegate.StateExpired {
		t.Errorf("renew without a TTL after expiry: state %s", x.View.State)
	}
}
