package registrytest

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock/clocktest"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/verify"
)

// testStatusProof checks the lockStatus.v1 proofs: bounded by the proof
// TTL and the lease's expiry, verifiable with verify.ParseAndVerifyStatus
// and verify.CheckStatus against the grant, and stating HELD, EXPIRED,
// RELEASED or REVOKED as the lease is.
func testStatusProof(t *testing.T, e *env) {
	reg := e.registry
	proofTTL := uint64(MaxProofTTL.Milliseconds())

	// A long lease: the proof TTL bounds exp.
	long := e.acquire(t, req("status/long", "owner-a", "sp-1", time.Minute))
	_, st := e.checkResult(t, long)
	if st == nil {
		return
	}
	if st.IssuedAt != uint64(ms(e.clock.Now())) || st.ExpiresAt != st.IssuedAt+proofTTL {
		t.Errorf("long lease proof iat %d exp %d, want %d and +%d", st.IssuedAt, st.ExpiresAt, ms(e.clock.Now()), proofTTL)
	}

	// A short lease: its expiry bounds exp.
	short := e.acquire(t, req("status/short", "owner-a", "sp-2", 2*time.Second))
	e.clock.Advance(1500 * time.Millisecond)
	s := e.status(t, short)
	g, digest, err := verify.ParseAndVerifyGrant(s.Grant, e.keys.Bundle)
	if err != nil {
		t.Fatalf("grant: %v", err)
	}
	st, err = verify.ParseAndVerifyStatus(s.Status, e.keys.Bundle)
	if err != nil {
		t.Fatalf("proof: %v", err)
	}
	if st.State != fencegate.StateHeld || st.ExpiresAt != uint64(short.View.Lease.ExpiresAt) {
		t.Errorf("proof 500ms before expiry: state %s exp %d, want HELD %d", st.State, st.ExpiresAt, short.View.Lease.ExpiresAt)
	}
	pol := verify.StatusPolicy{MaxAge: MaxProofTTL}
	if err := verify.CheckStatus(st, g, digest, e.clock.Now(), pol); err != nil {
		t.Errorf("CheckStatus of a fresh HELD proof: %v", err)
	}
	// The proof dies with the lease.
	err = verify.CheckStatus(st, g, digest, time.UnixMilli(short.View.Lease.ExpiresAt), pol)
	if !errors.Is(err, verify.ErrProofExpired) {
		t.Errorf("CheckStatus at the lease's expiry: %v, want ErrProofExpired", err)
	}
	// A proof is bound to its grant.
	lg, ldigest, _ := verify.ParseAndVerifyGrant(long.Grant, e.keys.Bundle)
	if err := verify.CheckStatus(st, lg, ldigest, e.clock.Now(), pol); !errors.Is(err, verify.ErrProofMismatch) {
		t.Errorf("CheckStatus of one lease's proof against another grant: %v, want ErrProofMismatch", err)
	}

	// EXPIRED.
	e.clock.Advance(500 * time.Millisecond)
	s = e.status(t, short)
	if s.View.State != fencegate.StateExpired || s.StatusClaims.State != fencegate.StateExpired {
		t.Errorf("after expiry: %s / %s", s.View.State, s.StatusClaims.State)
	}

	// RELEASED.
	e.release(t, long)
	if s := e.status(t, long); s.StatusClaims.State != fencegate.StateReleased {
		t.Errorf("after release: %s", s.StatusClaims.State)
	}

	// REVOKED by an epoch bump; the proof states the current epoch.
	rv := e.acquire(t, req("status/revoked", "owner-a", "sp-3", time.Minute))
	m, err := reg().BumpEpoch(e.ctx)
	if err != nil {
		t.Fatalf("bump epoch: %v", err)
	}
	s = e.status(t, rv)
	if s.StatusClaims.State != fencegate.StateRevoked || s.StatusClaims.IssuerEpoch != m.IssuerEpoch {
		t.Errorf("after an epoch bump: state %s epoch %d, want REVOKED %d", s.StatusClaims.State, s.StatusClaims.IssuerEpoch, m.IssuerEpoch)
	}

	// Every way of naming a lease gives the same answer.
	for _, q := range []registry.LeaseQuery{{Lease: rv.View.Lease.Lease}, {Digest: rv.View.Lease.Digest}, {Owner: "owner-a", RequestID: "sp-3"}} {
		s, err := reg().Status(e.ctx, q)
		if err != nil {
			t.Fatalf("status %+v: %v", q, err)
		}
		e.checkResult(t, s)
		if s.View.Lease.Lease != rv.View.Lease.Lease || !bytes.Equal(s.Grant, rv.Grant) || s.StatusClaims.State != fencegate.StateRevoked {
			t.Errorf("status %+v: lease %s state %s", q, s.View.Lease.Lease, s.StatusClaims.State)
		}
	}
}

// testEpochBump checks that an epoch bump revokes every older grant at
// once: status REVOKED, the resource can be acquired again immediately by
// another owner, and new grants carry the new epoch.
func testEpochBump(t *testing.T, e *env) {
	reg := e.registry
	if m := e.meta(t); m.IssuerEpoch > 1 {
		t.Fatalf("a new registry starts at epoch %d", m.IssuerEpoch)
	}
	a := e.acquire(t, req("epoch/r1", "owner-a", "eb-1", time.Minute))
	b := e.acquire(t, req("epoch/r2", "owner-a", "eb-2", time.Minute))
	if a.View.Lease.IssuerEpoch != 1 {
		t.Errorf("first grant has epoch %d, want 1", a.View.Lease.IssuerEpoch)
	}
	m, err := reg().BumpEpoch(e.ctx)
	if err != nil {
		t.Fatalf("bump epoch: %v", err)
	}
	if m.IssuerEpoch != 2 || e.meta(t).IssuerEpoch != 2 {
		t.Fatalf("after one bump: epoch %d / stored %d", m.IssuerEpoch, e.meta(t).IssuerEpoch)
	}
	for _, old := range []registry.Result{a, b} {
		s := e.status(t, old)
		if s.StatusClaims.State != fencegate.StateRevoked || s.StatusClaims.IssuerEpoch != 2 {
			t.Errorf("old grant %s: state %s epoch %d", old.View.Lease.Lease, s.StatusClaims.State, s.StatusClaims.IssuerEpoch)
		}
	}

	c := e.acquire(t, req("epoch/r1", "owner-c", "eb-3", time.Minute))
	g, _, err := verify.ParseAndVerifyGrant(c.Grant, e.keys.Bundle)
	if err != nil {
		t.Fatalf("new grant: %v", err)
	}
	if g.IssuerEpoch != 2 || g.FenceToken <= a.View.Lease.Fence {
		t.Errorf("grant after the bump: epoch %d fence %d (old fence %d)", g.IssuerEpoch, g.FenceToken, a.View.Lease.Fence)
	}
	if st := e.status(t, c); st.StatusClaims.State != fencegate.StateHeld {
		t.Errorf("new grant reads %s", st.StatusClaims.State)
	}

	x, err := reg().Renew(e.ctx, "owner-a", a.View.Lease.Lease, time.Minute)
	wantErr(t, "renew of a revoked grant", err, registry.ErrNotHeld)
	if x.View.State != fencegate.StateRevoked {
		t.Errorf("renew of a revoked grant: state %s", x.View.State)
	}
	if r := e.release(t, b); r.View.State != fencegate.StateRevoked {
		t.Errorf("release of a revoked grant: state %s", r.View.State)
	}
	if r := e.acquire(t, req("epoch/r1", "owner-a", "eb-1", time.Minute)); !r.Existing || r.View.State != fencegate.StateRevoked || !bytes.Equal(r.Grant, a.Grant) {
		t.Errorf("repeat of a revoked acquire: existing=%v state %s", r.Existing, r.View.State)
	}
	m2, err := reg().BumpEpoch(e.ctx)
	if err != nil || m2.IssuerEpoch != 3 {
		t.Fatalf("second bump: epoch %d err %v", m2.IssuerEpoch, err)
	}
	if st := e.status(t, c); st.StatusClaims.State != fencegate.StateRevoked {
		t.Errorf("grant of epoch 2 after the second bump: %s", st.StatusClaims.State)
	}
}

// slowBackend advances the clock by delay after each Acquire, as a slow
// commit or a pause of the registry process would.
type slowBackend struct {
	registry.Backend
	clock *clocktest.Clock
	delay time.Duration
}

func (s slowBackend) Acquire(ctx context.Context, in registry.AcquireInput, seal registry.SealFunc) (registry.AcquireResult, error) {
	res, err := s.Backend.Acquire(ctx, in, seal)
	s.clock.Advance(s.delay)
	return res, err
}

// testProofAfterSlowAcquire checks the proof of a grant whose acquire took
// longer than the lease itself: the proof must still verify and state the
// lease as it was decided (HELD at iat < expiry), never a HELD proof whose
// exp is not after its iat.
func testProofAfterSlowAcquire(t *testing.T, e *env) {
	reg := e.newRegistry(t, slowBackend{Backend: e.backend(), clock: e.clock, delay: time.Second})
	res, err := reg.Acquire(e.ctx, req("status/slow", "owner-a", "ps-1", MinTTL))
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	e.checkResult(t, res)
	e.record(t, "status/slow", res.View.Lease.Fence)
	// The lease is over by now; the registry says so.
	if st := e.status(t, res); st.View.State != fencegate.StateExpired {
		t.Errorf("after the slow acquire: %s", st.View.State)
	}
	// A replay through the slow backend: the proof states EXPIRED.
	again, err := reg.Acquire(e.ctx, req("status/slow", "owner-a", "ps-1", MinTTL))
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	e.checkResult(t, again)
	if again.StatusClaims.State != fencegate.StateExpired || !bytes.Equal(again.Grant, res.Grant) {
		t.Errorf("replay after expiry: state %s same grant %v", again.StatusClaims.State, bytes.Equal(again.Grant, res.Grant))
	}
}
