package registrytest

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/registry"
)

// testIdempotency checks that (owner, requestId) identifies one acquire:
// repeating it returns the same grant bytes (even after expiry), a lost
// answer is recovered by lookup, reusing the request ID for another
// resource or operation class is a conflict, and other owners' request IDs
// are independent.
func testIdempotency(t *testing.T, e *env) {
	const r1, r2 = "idem/r1", "idem/r2"
	reg := e.registry

	a := e.acquire(t, req(r1, "owner-a", "req-1", time.Second))
	again := e.acquire(t, req(r1, "owner-a", "req-1", time.Second))
	if !again.Existing || !bytes.Equal(again.Grant, a.Grant) || again.View.Lease != a.View.Lease {
		t.Fatalf("repeat: existing=%v same grant=%v lease %+v, want %+v", again.Existing, bytes.Equal(again.Grant, a.Grant), again.View.Lease, a.View.Lease)
	}
	if again.View.State != fencegate.StateHeld {
		t.Errorf("repeat while held reads %s", again.View.State)
	}
	// A repeat that asks to wait returns at once with the same grant.
	wreq := req(r1, "owner-a", "req-1", time.Second)
	wreq.Wait = 10 * time.Second
	if w := e.acquire(t, wreq); !w.Existing || !bytes.Equal(w.Grant, a.Grant) {
		t.Errorf("waiting repeat: existing=%v same grant=%v", w.Existing, bytes.Equal(w.Grant, a.Grant))
	}

	// A lost answer: the lease is found by (owner, requestId) and by digest.
	lv, err := e.backend().Lease(e.ctx, registry.LeaseQuery{Owner: "owner-a", RequestID: "req-1", Now: e.clock.Now()})
	if err != nil {
		t.Fatalf("lookup by request ID: %v", err)
	}
	if lv.Lease.Token != string(a.Grant) || lv.Lease.Digest != fencegate.Digest(a.Grant) || lv.State != fencegate.StateHeld {
		t.Errorf("lookup by request ID: lease %+v state %s", lv.Lease, lv.State)
	}
	for _, q := range []registry.LeaseQuery{{Owner: "owner-a", RequestID: "req-1"}, {Digest: a.View.Lease.Digest}, {Lease: a.View.Lease.Lease}} {
		st, err := reg().Status(e.ctx, q)
		if err != nil {
			t.Fatalf("status %+v: %v", q, err)
		}
		e.checkResult(t, st)
		if !bytes.Equal(st.Grant, a.Grant) {
			t.Errorf("status %+v returned another grant", q)
		}
	}
	for _, q := range []registry.LeaseQuery{{Owner: "owner-a", RequestID: "req-unknown"}, {Owner: "owner-z", RequestID: "req-1"}, {Digest: fencegate.Digest([]byte("x"))}, {Lease: "lease-unknown"}} {
		_, err := reg().Status(e.ctx, q)
		wantErr(t, "status of an unknown lease", err, registry.ErrNotFound)
	}

	// The same request ID for another resource or operation class.
	before := e.snapshot(t, r1, r2)
	_, err = e.tryAcquire(t, req(r2, "owner-a", "req-1", time.Second))
	wantErr(t, "request ID reused for another resource", err, registry.ErrRequestConflict)
	read := req(r1, "owner-a", "req-1", time.Second)
	read.OpClass = "read"
	_, err = e.tryAcquire(t, read)
	wantErr(t, "request ID reused for another operation class", err, registry.ErrRequestConflict)
	e.unchanged(t, "a conflicting request ID", before)

	// Another owner with the same request ID is another acquire.
	_, err = e.tryAcquire(t, req(r1, "owner-b", "req-1", time.Second))
	wantBusy(t, "other owner, same request ID, while held", err, r1)
	if _, err := e.backend().Lease(e.ctx, registry.LeaseQuery{Owner: "owner-b", RequestID: "req-1", Now: e.clock.Now()}); err == nil {
		t.Errorf("a busy answer recorded the request ID")
	}
	o2 := e.acquire(t, req(r2, "owner-b", "req-1", time.Second))
	if o2.Existing || o2.View.Lease.Resource != r2 {
		t.Errorf("owner-b req-1 on %s: existing=%v resource %s", r2, o2.Existing, o2.View.Lease.Resource)
	}

	// After expiry the same request still returns the same grant, now EXPIRED,
	// and consumes no fence.
	e.clock.Advance(time.Second)
	lastFence := e.resource(t, r1).Record.LastFence
	late := e.acquire(t, req(r1, "owner-a", "req-1", time.Second))
	if !late.Existing || !bytes.Equal(late.Grant, a.Grant) || late.View.State != fencegate.StateExpired || late.StatusClaims.State != fencegate.StateExpired {
		t.Errorf("repeat after expiry: existing=%v same grant=%v state %s proof %s", late.Existing, bytes.Equal(late.Grant, a.Grant), late.View.State, late.StatusClaims.State)
	}
	if got := e.resource(t, r1).Record.LastFence; got != lastFence {
		t.Errorf("a repeat after expiry moved LastFence %d -> %d", lastFence, got)
	}

	// owner-c's req-1 on r1 is its own acquire, with a higher fence.
	c := e.acquire(t, req(r1, "owner-c", "req-1", time.Second))
	if c.View.Lease.Fence <= a.View.Lease.Fence || c.View.Lease.Digest == a.View.Lease.Digest {
		t.Errorf("owner-c req-1: fence %d digest %s (owner-a: %d %s)", c.View.Lease.Fence, c.View.Lease.Digest, a.View.Lease.Fence, a.View.Lease.Digest)
	}
	// Each owner's request still finds its own lease.
	for _, want := range []registry.Result{a, o2, c} {
		lv, err := e.backend().Lease(e.ctx, registry.LeaseQuery{Owner: want.View.Lease.Owner, RequestID: "req-1", Now: e.clock.Now()})
		if err != nil || lv.Lease.Lease != want.View.Lease.Lease {
			t.Errorf("lookup %s/req-1: lease %q err %v, want %s", want.View.Lease.Owner, lv.Lease.Lease, err, want.View.Lease.Lease)
		}
	}

	// Released: the repeat returns the released lease, not a new one.
	e.release(t, c)
	if r := e.acquire(t, req(r1, "owner-c", "req-1", time.Second)); !r.Existing || r.View.State != fencegate.StateReleased || !bytes.Equal(r.Grant, c.Grant) {
		t.Errorf("repeat after release: existing=%v state %s", r.Existing, r.View.State)
	}
}

// testRenew checks renewal: it extends a HELD lease (same grant), is
// refused to other owners, and after expiry answers ErrNotHeld with state
// EXPIRED, never a new grant.
func testRenew(t *testing.T, e *env) {
	const res = "renew/r1"
	reg := e.registry
	a := e.acquire(t, req(res, "owner-a", "rn-1", time.Second))
	lease := a.View.Lease.Lease

	e.clock.Advance(600 * time.Millisecond)
	r, err := reg().Renew(e.ctx, "owner-a", lease, time.Second)
	if err != nil {
		t.Fatalf("renew: %v", err)
	}
	e.checkResult(t, r)
	if r.View.State != fencegate.StateHeld || r.View.Lease.ExpiresAt != ms(e.clock.Now())+1000 {
		t.Errorf("renewed lease: state %s expiresAt %d, want HELD %d", r.View.State, r.View.Lease.ExpiresAt, ms(e.clock.Now())+1000)
	}
	if !bytes.Equal(r.Grant, a.Grant) || r.View.Lease.Fence != a.View.Lease.Fence {
		t.Errorf("renew changed the grant or fence")
	}

	// Past the original expiry, before the renewed one: still held.
	e.clock.Advance(600 * time.Millisecond)
	if st := e.status(t, a); st.View.State != fencegate.StateHeld {
		t.Fatalf("renewed lease past its original expiry reads %s", st.View.State)
	}
	_, err = e.tryAcquire(t, req(res, "owner-b", "rn-2", time.Second))
	wantBusy(t, "acquire of a renewed lease", err, res)

	before := e.snapshot(t, res)
	_, err = reg().Renew(e.ctx, "owner-b", lease, time.Second)
	wantErr(t, "renew by another owner", err, registry.ErrNotOwner)
	_, err = reg().Renew(e.ctx, "owner-a", "lease-unknown", time.Second)
	wantErr(t, "renew of an unknown lease", err, registry.ErrNotFound)
	_, err = reg().Renew(e.ctx, "owner-a", lease, MaxTTL+time.Millisecond)
	wantErr(t, "renew with a TTL above the maximum", err, registry.ErrInvalidInput)
	_, err = reg().Renew(e.ctx, "owner-a", lease, MinTTL-time.Millisecond)
	wantErr(t, "renew with a TTL below the minimum", err, registry.ErrInvalidInput)
	e.unchanged(t, "refused renewals", before)

	// Exactly at expiry the lease is over.
	e.clock.Advance(400 * time.Millisecond)
	if now := ms(e.clock.Now()); now != r.View.Lease.ExpiresAt {
		t.Fatalf("test clock at %d, lease expires at %d", now, r.View.Lease.ExpiresAt)
	}
	lastFence := e.resource(t, res).Record.LastFence
	x, err := reg().Renew(e.ctx, "owner-a", lease, time.Second)
	wantErr(t, "renew at expiry", err, registry.ErrNotHeld)
	e.checkResult(t, x)
	if x.View.State != fencegate.StateExpired || x.StatusClaims.State != fencegate.StateExpired || !bytes.Equal(x.Grant, a.Grant) {
		t.Errorf("renew at expiry: state %s proof %s same grant %v", x.View.State, x.StatusClaims.State, bytes.Equal(x.Grant, a.Grant))
	}
	e.clock.Advance(time.Second)
	x, err = reg().Renew(e.ctx, "owner-a", lease, time.Second)
	wantErr(t, "renew after expiry", err, registry.ErrNotHeld)
	if x.View.State != fencegate.StateExpired {
		t.Errorf("renew after expiry: state %s", x.View.State)
	}
	if got := e.resource(t, res).Record; got.LastFence != lastFence {
		t.Errorf("renew after expiry moved LastFence %d -> %d", lastFence, got.LastFence)
	}
	if st := e.status(t, a); st.View.State != fencegate.StateExpired {
		t.Errorf("status after a refused renew: %s", st.View.State)
	}

	// The resource is free; the old owner's lease stays expired.
	b := e.acquire(t, req(res, "owner-b", "rn-3", time.Second))
	if _, err := reg().Renew(e.ctx, "owner-a", lease, time.Second); !errors.Is(err, registry.ErrNotHeld) {
		t.Errorf("renew of the old lease after a new grant: %v", err)
	}
	if st := e.status(t, b); st.View.State != fencegate.StateHeld {
		t.Errorf("new holder reads %s after the old owner's renew", st.View.State)
	}

	// Release then renew.
	e.release(t, b)
	x, err = reg().Renew(e.ctx, "owner-b", b.View.Lease.Lease, time.Second)
	wantErr(t, "renew after release", err, registry.ErrNotHeld)
	if x.View.State != fencegate.StateReleased {
		t.Errorf("renew after release: state %s", x.View.State)
	}
}

// testRelease checks that release ends a lease at once, is idempotent, is
// refused to other owners and does not turn an expired lease into a
// released one.
func testRelease(t *testing.T, e *env) {
	const res = "release/r1"
	reg := e.registry
	a := e.acquire(t, req(res, "owner-a", "rl-1", time.Minute))
	rel := e.release(t, a)
	if rel.View.State != fencegate.StateReleased || rel.View.Lease.EndedAt != ms(e.clock.Now()) {
		t.Errorf("release: state %s endedAt %d", rel.View.State, rel.View.Lease.EndedAt)
	}
	if v := e.resource(t, res); v.Record.FreedAt != ms(e.clock.Now()) || v.Holder == nil || v.Holder.State != fencegate.StateReleased {
		t.Errorf("resource after release: %+v", v)
	}

	before := e.snapshot(t, res)
	again := e.release(t, a)
	if again.View.State != fencegate.StateReleased || again.View.Lease != rel.View.Lease {
		t.Errorf("second release: state %s lease %+v", again.View.State, again.View.Lease)
	}
	_, err := reg().Release(e.ctx, "owner-b", a.View.Lease.Lease)
	wantErr(t, "release by another owner", err, registry.ErrNotOwner)
	_, err = reg().Release(e.ctx, "owner-a", "lease-unknown")
	wantErr(t, "release of an unknown lease", err, registry.ErrNotFound)
	e.unchanged(t, "a repeated or refused release", before)

	// Another owner takes it at once, without any clock movement.
	b := e.acquire(t, req(res, "owner-b", "rl-2", time.Second))
	_, err = reg().Release(e.ctx, "owner-a", b.View.Lease.Lease)
	wantErr(t, "release of another owner's lease", err, registry.ErrNotOwner)
	if st := e.status(t, b); st.View.State != fencegate.StateHeld {
		t.Errorf("refused release changed the holder to %s", st.View.State)
	}

	// Releasing an expired lease reports EXPIRED and keeps it so.
	e.clock.Advance(time.Second)
	x := e.release(t, b)
	if x.View.State != fencegate.StateExpired || x.View.Lease.EndedAt != b.View.Lease.ExpiresAt {
		t.Errorf("release after expiry: state %s endedAt %d (expiry %d)", x.View.State, x.View.Lease.EndedAt, b.View.Lease.ExpiresAt)
	}
	if st := e.status(t, b); st.View.State != fencegate.StateExpired {
		t.Errorf("status after releasing an expired lease: %s", st.View.State)
	}
}
