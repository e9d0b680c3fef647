package registrytest

import (
	"errors"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/verify"
)

// testRevokeLease checks the revocation of one lease: its status proof
// then states REVOKED (a sidecar's check refuses it), its renewal fails
// with ErrNotHeld, its release answers REVOKED, a second revocation
// changes nothing, other leases and the epoch are untouched, and the
// resource is granted at once to another owner with a higher fence; a
// missing lease is ErrNotFound and writes nothing; the revocation
// survives a restart.
func testRevokeLease(t *testing.T, e *env) {
	const res, other = "revoke/r1", "revoke/r2"
	a := e.acquire(t, req(res, "owner-a", "rv-a", time.Minute))
	keep := e.acquire(t, req(other, "owner-a", "rv-k", time.Minute))
	epoch := e.meta(t).IssuerEpoch

	e.revokeHeld(t, a)
	e.revokedRefusesTheOwner(t, a)
	before := e.snapshot(t, res, other)
	if again, revoked, err := e.registry().RevokeLease(e.ctx, a.View.Lease.Lease); err != nil || revoked || again.View.State != fencegate.StateRevoked {
		t.Errorf("second revoke: revoked %v state %s, %v", revoked, again.View.State, err)
	}
	_, _, err := e.registry().RevokeLease(e.ctx, "lease-missing")
	wantErr(t, "revoke of a missing lease", err, registry.ErrNotFound)
	_, _, err = e.registry().RevokeLease(e.ctx, "bad/lease")
	wantErr(t, "revoke of a malformed lease ID", err, registry.ErrInvalidInput)
	e.unchanged(t, "a second revoke, a missing and a malformed lease", before)

	if m := e.meta(t); m.IssuerEpoch != epoch {
		t.Errorf("revoking one lease moved the issuer epoch %d -> %d", epoch, m.IssuerEpoch)
	}
	if st := e.status(t, keep); st.View.State != fencegate.StateHeld {
		t.Errorf("another lease after revoking one: %s", st.View.State)
	}
	b := e.acquire(t, req(res, "owner-b", "rv-b", time.Minute))
	if b.Existing || b.View.Lease.Fence <= a.View.Lease.Fence {
		t.Errorf("acquire after revoke: existing %v fence %d, want a new grant above %d", b.Existing, b.View.Lease.Fence, a.View.Lease.Fence)
	}
	if e.opener.NotDurable != "" {
		return
	}
	e.restart(t)
	if st := e.status(t, a); st.View.State != fencegate.StateRevoked {
		t.Errorf("revoked lease after a restart: %s", st.View.State)
	}
}

// revokeHeld revokes the HELD lease a and checks the answer and its
// status reads: REVOKED, with a proof a sidecar's check refuses.
func (e *env) revokeHeld(t *testing.T, a registry.Result) {
	t.Helper()
	out, revoked, err := e.registry().RevokeLease(e.ctx, a.View.Lease.Lease)
	if err != nil || !revoked {
		t.Fatalf("revoke %s: revoked %v, %v", a.View.Lease.Lease, revoked, err)
	}
	e.checkResult(t, out)
	if out.View.State != fencegate.StateRevoked {
		t.Errorf("revoke answered state %s", out.View.State)
	}
	st := e.status(t, a)
	g, _ := e.checkResult(t, st)
	if st.View.State != fencegate.StateRevoked {
		t.Errorf("status after revoke: %s, want REVOKED", st.View.State)
	}
	if g != nil {
		checkAt := time.UnixMilli(int64(st.StatusClaims.IssuedAt))
		if err := verify.CheckStatus(&st.StatusClaims, g, a.View.Lease.Digest, checkAt, verify.StatusPolicy{MaxAge: MaxProofTTL}); !errors.Is(err, verify.ErrGrantNotHeld) {
			t.Errorf("a sidecar's check of the revoked grant's proof: %v, want GRANT_NOT_HELD", err)
		}
	}
	if byDigest, err := e.registry().GrantStatus(e.ctx, a.View.Lease.Digest); err != nil || byDigest.View.State != fencegate.StateRevoked {
		t.Errorf("grant status after revoke: %s, %v", byDigest.View.State, err)
	}
}

// revokedRefusesTheOwner: the owner of the revoked lease a cannot renew it
// (ErrNotHeld, state REVOKED), and its release answers REVOKED.
func (e *env) revokedRefusesTheOwner(t *testing.T, a registry.Result) {
	t.Helper()
	if r, err := e.registry().Renew(e.ctx, "owner-a", a.View.Lease.Lease, 0); !errors.Is(err, registry.ErrNotHeld) || r.View.State != fencegate.StateRevoked {
		t.Errorf("renew of the revoked lease: state %s, %v; want REVOKED, ErrNotHeld", r.View.State, err)
	}
	if r := e.release(t, a); r.View.State != fencegate.StateRevoked {
		t.Errorf("release of the revoked lease answered %s, want REVOKED", r.View.State)
	}
}

// testRevokeWakesWaiter: a waiting acquire is granted once the holder's
// lease is revoked, with a higher fence.
func testRevokeWakesWaiter(t *testing.T, e *env) {
	const res = "revoke/wait"
	h := e.acquire(t, req(res, "owner-h", "rw-h", time.Minute))
	ch := e.goAcquire(e.ctx, 0, waitReq(res, "owner-w", "rw-w", 30*time.Second), nil)
	e.waitQueued(t, 1)
	if _, _, err := e.registry().RevokeLease(e.ctx, h.View.Lease.Lease); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	w := e.granted(t, await(t, ch, "the handoff after a revocation"))
	if w.View.Lease.Fence <= h.View.Lease.Fence {
		t.Errorf("waiter granted fence %d after revoking fence %d", w.View.Lease.Fence, h.View.Lease.Fence)
	}
}

// testListLeases checks the lease listing: every stored lease, in
// (resource, fence) order with its effective state, pages that follow
// each other by Next without a gap or a repeat, filters by resource,
// prefix and state, and bad queries refused with ErrInvalidInput.
func testListLeases(t *testing.T, e *env) {
	reg := e.registry
	a1 := e.acquire(t, req("list/a", "owner-a", "ls-a1", time.Second))
	e.release(t, a1)
	a2 := e.acquire(t, req("list/a", "owner-b", "ls-a2", time.Minute))
	ab := e.acquire(t, req("list/ab", "owner-a", "ls-ab", time.Minute))
	c := e.acquire(t, req("list/c", "owner-c", "ls-c", time.Second))
	e.acquire(t, req("other/z", "owner-c", "ls-z", time.Minute))
	e.clock.Advance(2 * time.Second) // list/c expires (not written yet)

	type row struct {
		lease, state string
	}
	want := []row{
		{a1.View.Lease.Lease, fencegate.StateReleased}, {a2.View.Lease.Lease, fencegate.StateHeld},
		{ab.View.Lease.Lease, fencegate.StateHeld}, {c.View.Lease.Lease, fencegate.StateExpired},
	}
	var got []row
	q := registry.LeasesQuery{Prefix: "list/", Limit: 3}
	for pages := 0; ; pages++ {
		if pages > len(want) {
			t.Fatalf("more pages than leases: %v", got)
		}
		p, err := reg().Leases(e.ctx, q)
		if err != nil {
			t.Fatalf("list %+v: %v", q, err)
		}
		for _, v := range p.Leases {
			got = append(got, row{v.Lease.Lease, v.State})
		}
		if p.Next.IsZero() {
			break
		}
		q.After = p.Next
	}
	if len(got) != len(want) {
		t.Fatalf("listing of list/: %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("listing row %d: %v, want %v", i, got[i], want[i])
		}
	}

	for _, f := range []struct {
		q    registry.LeasesQuery
		want int
	}{
		{registry.LeasesQuery{Resource: "list/a"}, 2},
		{registry.LeasesQuery{Prefix: "list/", State: fencegate.StateHeld}, 2},
		{registry.LeasesQuery{State: fencegate.StateHeld}, 3},
		{registry.LeasesQuery{}, 5},
		{registry.LeasesQuery{Prefix: "none/"}, 0},
	} {
		p, err := reg().Leases(e.ctx, f.q)
		if err != nil || len(p.Leases) != f.want || !p.Next.IsZero() {
			t.Errorf("list %+v: %d leases, next %v, %v; want %d", f.q, len(p.Leases), p.Next, err, f.want)
		}
	}
	for _, bad := range []registry.LeasesQuery{
		{Resource: "list/a", Prefix: "list/"}, {Limit: registry.MaxLeasesLimit + 1}, {State: "gone"}, {Resource: "bad resource"},
	} {
		_, err := reg().Leases(e.ctx, bad)
		wantErr(t, "list with a bad query", err, registry.ErrInvalidInput)
	}
}
