package registry_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock/clocktest"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/memory"
	"github.com/fencegate/fencegate/registry/registrytest"
	"github.com/fencegate/fencegate/verify"
)

// reuseService is a Registry over a new memory backend on a clock the test
// moves, with a 5 s proof TTL and the given proof reuse.
func reuseService(t *testing.T, reuse time.Duration) (*registry.Registry, *clocktest.Clock, *registrytest.Keys) {
	t.Helper()
	be := memory.NewBackend()
	t.Cleanup(func() { be.Close() })
	clk := clocktest.New(t0)
	k := registrytest.NewKeys(t)
	reg, err := registry.New(registry.Options{Backend: be, Signer: k.Signer, Clock: clk,
		MaxProofTTL: 5 * time.Second, ProofReuse: reuse})
	if err != nil {
		t.Fatal(err)
	}
	return reg, clk, &k
}

// statusOf reads a grant's status and checks, as a sidecar in registry mode
// would, that the answer verifies and says what the registry just read.
func statusOf(t *testing.T, reg *registry.Registry, k *registrytest.Keys, clk *clocktest.Clock, g registry.Result) (registry.Result, error) {
	t.Helper()
	res, err := reg.GrantStatus(context.Background(), g.View.Lease.Digest)
	if err != nil {
		t.Fatal(err)
	}
	st, err := verify.ParseAndVerifyStatus(res.Status, k.Bundle)
	if err != nil {
		t.Fatalf("status proof does not verify: %v", err)
	}
	if st.State != res.View.State || st.FenceToken != res.View.Lease.Fence || st.IssuerEpoch != res.View.Meta.IssuerEpoch {
		t.Fatalf("proof states %s fence %d epoch %d; the read found %s fence %d epoch %d",
			st.State, st.FenceToken, st.IssuerEpoch, res.View.State, res.View.Lease.Fence, res.View.Meta.IssuerEpoch)
	}
	grant, _, err := verify.ParseAndVerifyGrant(g.Grant, k.Bundle)
	if err != nil {
		t.Fatal(err)
	}
	return res, verify.CheckStatus(st, grant, g.View.Lease.Digest, clk.Now(), verify.StatusPolicy{MaxAge: 5 * time.Second, ClockSkew: time.Second})
}

// Within the reuse window a status read of an unchanged lease answers with
// the proof it signed before; past it, with a new one. Reads of another
// resource's changes (the global revision moves) and a renewal keep the
// statement, so the proof is reused.
func TestProofReusedWhileTheStatementHolds(t *testing.T) {
	reg, clk, k := reuseService(t, 250*time.Millisecond)
	ctx := context.Background()
	a, err := reg.Acquire(ctx, registry.AcquireRequest{Resource: "r", Owner: "o", RequestID: "q-1", TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	first, err := statusOf(t, reg, k, clk, a)
	if err != nil {
		t.Fatalf("held grant: %v", err)
	}
	clk.Advance(100 * time.Millisecond)
	if _, err := reg.Acquire(ctx, registry.AcquireRequest{Resource: "other", Owner: "o", RequestID: "q-2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Renew(ctx, "o", a.View.Lease.Lease, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	again, err := statusOf(t, reg, k, clk, a)
	if err != nil {
		t.Fatalf("held grant, reused proof: %v", err)
	}
	if !bytes.Equal(again.Status, first.Status) {
		t.Errorf("unchanged statement 100 ms later: a new proof was signed, want the first reused")
	}
	clk.Advance(200 * time.Millisecond) // 300 ms after the first proof
	late, err := statusOf(t, reg, k, clk, a)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(late.Status, first.Status) {
		t.Errorf("300 ms later, past the 250 ms reuse: the first proof was reused")
	}
	if late.StatusClaims.IssuedAt != uint64(clk.Now().UnixMilli()) {
		t.Errorf("new proof iat %d, want now %d", late.StatusClaims.IssuedAt, clk.Now().UnixMilli())
	}
}

// Every change of what a proof states is seen by the very next read, however
// recent the cached proof: a release, an epoch bump (revocation) and the
// lease's expiry each make the next answer a new proof that says so.
func TestProofNotReusedAcrossAStateChange(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(*registry.Registry, *clocktest.Clock, registry.Result)
		ttl    time.Duration
		want   string
		code   error
	}{
		{"release", func(reg *registry.Registry, _ *clocktest.Clock, a registry.Result) {
			if _, err := reg.Release(context.Background(), "o", a.View.Lease.Lease); err != nil {
				t.Fatal(err)
			}
		}, 10 * time.Second, fencegate.StateReleased, verify.ErrGrantNotHeld},
		{"epoch bump", func(reg *registry.Registry, _ *clocktest.Clock, _ registry.Result) {
			if _, err := reg.BumpEpoch(context.Background()); err != nil {
				t.Fatal(err)
			}
		}, 10 * time.Second, fencegate.StateRevoked, verify.ErrEpochRevoked},
		{"expiry", func(_ *registry.Registry, clk *clocktest.Clock, _ registry.Result) {
			clk.Advance(150 * time.Millisecond) // the lease's TTL is 200 ms
		}, 200 * time.Millisecond, fencegate.StateExpired, verify.ErrGrantNotHeld},
	} {
		t.Run(c.name, func(t *testing.T) {
			reg, clk, k := reuseService(t, 250*time.Millisecond)
			a, err := reg.Acquire(context.Background(), registry.AcquireRequest{Resource: "r", Owner: "o", RequestID: "q-1", TTL: c.ttl})
			if err != nil {
				t.Fatal(err)
			}
			clk.Advance(100 * time.Millisecond)
			if _, err := statusOf(t, reg, k, clk, a); err != nil {
				t.Fatalf("held grant: %v", err)
			}
			c.change(reg, clk, a)
			res, err := statusOf(t, reg, k, clk, a)
			if res.StatusClaims.State != c.want {
				t.Errorf("after %s the proof says %s, want %s", c.name, res.StatusClaims.State, c.want)
			}
			if !errors.Is(err, c.code) {
				t.Errorf("after %s the sidecar's check gives %v, want %v", c.name, err, c.code)
			}
		})
	}
}

// A negative ProofReuse signs every answer; a reuse above a quarter of the
// proof TTL is refused at New.
func TestProofReuseOptions(t *testing.T) {
	reg, clk, k := reuseService(t, -1)
	a, err := reg.Acquire(context.Background(), registry.AcquireRequest{Resource: "r", Owner: "o", RequestID: "q-1"})
	if err != nil {
		t.Fatal(err)
	}
	first, _ := statusOf(t, reg, k, clk, a)
	clk.Advance(time.Millisecond)
	next, _ := statusOf(t, reg, k, clk, a)
	if bytes.Equal(first.Status, next.Status) {
		t.Error("reuse off: the same proof answered twice")
	}
	be := memory.NewBackend()
	defer be.Close()
	_, err = registry.New(registry.Options{Backend: be, Signer: k.Signer, MaxProofTTL: 4 * time.Second, ProofReuse: 1001 * time.Millisecond})
	if !errors.Is(err, registry.ErrInvalidInput) {
		t.Errorf("reuse above TTL/4: %v, want ErrInvalidInput", err)
	}
}

// A read by lease ID (the SDK's Holder) always gets a proof signed at the
// read, whatever the cache holds: the SDK measures what remains of its
// lease from the proof's iat, which a reused proof would place earlier.
func TestLeaseReadsGetAFreshProof(t *testing.T) {
	reg, clk, k := reuseService(t, 250*time.Millisecond)
	a, err := reg.Acquire(context.Background(), registry.AcquireRequest{Resource: "r", Owner: "o", RequestID: "q-1", TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := statusOf(t, reg, k, clk, a); err != nil { // caches a proof
		t.Fatal(err)
	}
	clk.Advance(100 * time.Millisecond)
	for _, q := range []registry.LeaseQuery{{Lease: a.View.Lease.Lease}, {Owner: "o", RequestID: "q-1"}} {
		res, err := reg.Status(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusClaims.IssuedAt != uint64(clk.Now().UnixMilli()) {
			t.Errorf("read %+v: proof iat %d, want now %d", q, res.StatusClaims.IssuedAt, clk.Now().UnixMilli())
		}
	}
}
