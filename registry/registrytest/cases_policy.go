package registrytest

import (
	"slices"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/registry"
)

// testPolicyEnforced checks allowed owners, TTL bounds and operation
// classes: a refused acquire or renew fails with ErrPolicyDenied and writes
// nothing; the longest matching pattern applies.
func testPolicyEnforced(t *testing.T, e *env) {
	reg := e.registry
	p, err := reg().PutPolicy(e.ctx, fencegate.Policy{
		Pattern:       "pol/*",
		AllowedOwners: []string{"team-a/*", "svc-x"},
		MinTTLMs:      500,
		MaxTTLMs:      5000,
		OpClasses:     []string{"write", "compact"},
	})
	if err != nil {
		t.Fatalf("put policy: %v", err)
	}
	withClass := func(r registry.AcquireRequest, class string) registry.AcquireRequest {
		r.OpClass = class
		return r
	}
	denied := []registry.AcquireRequest{
		req("pol/r1", "team-b/w1", "pd-1", time.Second),
		req("pol/r1", "svc-xy", "pd-2", time.Second),
		req("pol/r1", "team-a", "pd-3", time.Second),
		req("pol/r1", "team-a/w1", "pd-4", 400*time.Millisecond),
		req("pol/r1", "team-a/w1", "pd-5", 5001*time.Millisecond),
		withClass(req("pol/r1", "team-a/w1", "pd-6", time.Second), "read"),
		withClass(req("pol/sub/r2", "svc-x", "pd-7", time.Second), "delete"),
	}
	before := e.snapshot(t, "pol/r1", "pol/sub/r2")
	for _, d := range denied {
		_, err := e.tryAcquire(t, d)
		wantErr(t, "acquire "+d.Owner+"/"+d.RequestID, err, registry.ErrPolicyDenied)
		if _, err := e.backend().Lease(e.ctx, registry.LeaseQuery{Owner: d.Owner, RequestID: d.RequestID, Now: e.clock.Now()}); err == nil {
			t.Errorf("denied acquire %s/%s recorded its request ID", d.Owner, d.RequestID)
		}
	}
	e.unchanged(t, "denied acquires", before)

	a := e.acquire(t, withClass(req("pol/r1", "team-a/w1", "pa-1", 5*time.Second), "compact"))
	if a.View.Lease.PolicyGeneration != p.Generation || a.View.Lease.OpClass != "compact" {
		t.Errorf("allowed grant: generation %d (want %d) class %s", a.View.Lease.PolicyGeneration, p.Generation, a.View.Lease.OpClass)
	}
	b := e.acquire(t, req("pol/sub/r2", "svc-x", "pa-2", 500*time.Millisecond))

	// Renew within the policy, then beyond it.
	if _, err := reg().Renew(e.ctx, "team-a/w1", a.View.Lease.Lease, 2*time.Second); err != nil {
		t.Errorf("renew within the policy: %v", err)
	}
	before = e.snapshot(t, "pol/r1")
	_, err = reg().Renew(e.ctx, "team-a/w1", a.View.Lease.Lease, 6*time.Second)
	wantErr(t, "renew above the policy's max TTL", err, registry.ErrPolicyDenied)
	_, err = reg().Renew(e.ctx, "team-a/w1", a.View.Lease.Lease, 400*time.Millisecond)
	wantErr(t, "renew below the policy's min TTL", err, registry.ErrPolicyDenied)
	e.unchanged(t, "denied renewals", before)

	// Outside the pattern nothing is enforced.
	e.acquire(t, withClass(req("other/r1", "team-b/w1", "pa-3", 100*time.Millisecond), "read"))

	// A longer prefix and an exact pattern take precedence.
	sub, err := reg().PutPolicy(e.ctx, fencegate.Policy{Pattern: "pol/sub/*", AllowedOwners: []string{"team-b/*"}})
	if err != nil {
		t.Fatalf("put policy: %v", err)
	}
	exact, err := reg().PutPolicy(e.ctx, fencegate.Policy{Pattern: "pol/sub/exact", OpClasses: []string{"read"}})
	if err != nil {
		t.Fatalf("put policy: %v", err)
	}
	if st := e.status(t, a); st.View.State != fencegate.StateHeld || st.View.PolicyGeneration != p.Generation {
		t.Errorf("a grant under pol/* after changes to other patterns: %s generation %d", st.View.State, st.View.PolicyGeneration)
	}
	if st := e.status(t, b); st.View.State != fencegate.StateRevoked || st.View.PolicyGeneration != sub.Generation {
		t.Errorf("a grant newly under pol/sub/*: %s generation %d", st.View.State, st.View.PolicyGeneration)
	}
	_, err = e.tryAcquire(t, req("pol/sub/r3", "team-a/w1", "pd-8", time.Second))
	wantErr(t, "team-a under pol/sub/*", err, registry.ErrPolicyDenied)
	if g := e.acquire(t, req("pol/sub/r3", "team-b/w1", "pa-4", 50*time.Second)); g.View.Lease.PolicyGeneration != sub.Generation {
		t.Errorf("grant under pol/sub/*: generation %d, want %d", g.View.Lease.PolicyGeneration, sub.Generation)
	}
	_, err = e.tryAcquire(t, req("pol/sub/exact", "team-b/w1", "pd-9", time.Second))
	wantErr(t, "write under the exact read-only policy", err, registry.ErrPolicyDenied)
	if g := e.acquire(t, withClass(req("pol/sub/exact", "team-a/w1", "pa-5", time.Second), "read")); g.View.Lease.PolicyGeneration != exact.Generation {
		t.Errorf("grant under the exact policy: generation %d, want %d", g.View.Lease.PolicyGeneration, exact.Generation)
	}
}

// testPolicyGeneration checks that every put and delete takes a new,
// higher generation, that a tombstone keeps it, and that invalid policies
// change nothing.
func testPolicyGeneration(t *testing.T, e *env) {
	reg := e.registry
	last := e.meta(t).PolicySeq
	next := func(what string, p fencegate.Policy, err error) fencegate.Policy {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if p.Generation <= last {
			t.Errorf("%s: generation %d, previous %d", what, p.Generation, last)
		}
		if m := e.meta(t); m.PolicySeq != p.Generation {
			t.Errorf("%s: PolicySeq %d, policy generation %d", what, m.PolicySeq, p.Generation)
		}
		last = p.Generation
		return p
	}
	p1, err := reg().PutPolicy(e.ctx, fencegate.Policy{Pattern: "gen/*", MaxTTLMs: 60000})
	next("put", p1, err)
	p2, err := reg().PutPolicy(e.ctx, fencegate.Policy{Pattern: "gen/*", MaxTTLMs: 30000})
	p2 = next("replace", p2, err)
	p3, err := reg().PutPolicy(e.ctx, fencegate.Policy{Pattern: "gen/x"})
	p3 = next("put another", p3, err)
	if v := e.resource(t, "gen/y"); v.PolicyGeneration != p2.Generation {
		t.Errorf("gen/y under gen/*: generation %d, want %d", v.PolicyGeneration, p2.Generation)
	}
	d, err := reg().DeletePolicy(e.ctx, "gen/*")
	d = next("delete", d, err)
	if !d.Deleted {
		t.Errorf("delete returned %+v, want a tombstone", d)
	}
	if v := e.resource(t, "gen/y"); v.PolicyGeneration != d.Generation {
		t.Errorf("gen/y after the delete: generation %d, want the tombstone's %d (never lower)", v.PolicyGeneration, d.Generation)
	}
	ps, err := reg().Policies(e.ctx)
	if err != nil {
		t.Fatalf("policies: %v", err)
	}
	i := slices.IndexFunc(ps, func(p fencegate.Policy) bool { return p.Pattern == "gen/*" })
	j := slices.IndexFunc(ps, func(p fencegate.Policy) bool { return p.Pattern == "gen/x" })
	if i < 0 || !ps[i].Deleted || ps[i].Generation != d.Generation || j < 0 || ps[j].Generation != p3.Generation || ps[j].Deleted {
		t.Errorf("policies after the delete: %+v", ps)
	}
	// The tombstone allows everything.
	e.acquire(t, req("gen/y", "anyone", "pg-1", 2*time.Minute))

	before := e.snapshot(t, "gen/y")
	_, err = reg().DeletePolicy(e.ctx, "gen/*")
	wantErr(t, "delete of a tombstone", err, registry.ErrNotFound)
	_, err = reg().DeletePolicy(e.ctx, "gen/none")
	wantErr(t, "delete of an unknown policy", err, registry.ErrNotFound)
	for _, bad := range []fencegate.Policy{
		{Pattern: ""},
		{Pattern: "gen//*"},
		{Pattern: "gen/../x"},
		{Pattern: "gen/ x"},
		{Pattern: "gen/*", MinTTLMs: 2000, MaxTTLMs: 1000},
		{Pattern: "gen/*", AllowedOwners: []string{"bad owner"}},
		{Pattern: "gen/*", OpClasses: []string{"bad/class"}},
	} {
		_, err := reg().PutPolicy(e.ctx, bad)
		wantErr(t, "invalid policy "+bad.Pattern, err, registry.ErrInvalidInput)
	}
	e.unchanged(t, "refused policy changes", before)

	p4, err := reg().PutPolicy(e.ctx, fencegate.Policy{Pattern: "gen/*"})
	p4 = next("put after delete", p4, err)
	if p4.Deleted {
		t.Errorf("a put after a delete is still a tombstone")
	}
}

// testPolicyRevokes checks that a policy change revokes the grants issued
// under the previous generation of the resource's policy, and only those.
func testPolicyRevokes(t *testing.T, e *env) {
	reg := e.registry
	a := e.acquire(t, req("rev/r1", "owner-a", "pr-1", time.Minute))
	other := e.acquire(t, req("norev/r1", "owner-a", "pr-2", time.Minute))
	if a.View.Lease.PolicyGeneration != 0 {
		t.Errorf("grant without a policy: generation %d", a.View.Lease.PolicyGeneration)
	}
	p, err := reg().PutPolicy(e.ctx, fencegate.Policy{Pattern: "rev/*"})
	if err != nil {
		t.Fatalf("put policy: %v", err)
	}
	s := e.status(t, a)
	if s.StatusClaims.State != fencegate.StateRevoked || s.StatusClaims.PolicyGeneration != p.Generation {
		t.Errorf("after a policy change: state %s generation %d, want REVOKED %d", s.StatusClaims.State, s.StatusClaims.PolicyGeneration, p.Generation)
	}
	if s := e.status(t, other); s.StatusClaims.State != fencegate.StateHeld {
		t.Errorf("a grant under no changed policy: %s", s.StatusClaims.State)
	}
	x, err := reg().Renew(e.ctx, "owner-a", a.View.Lease.Lease, time.Minute)
	wantErr(t, "renew of a revoked grant", err, registry.ErrNotHeld)
	if x.View.State != fencegate.StateRevoked {
		t.Errorf("renew of a revoked grant: %s", x.View.State)
	}

	b := e.acquire(t, req("rev/r1", "owner-b", "pr-3", time.Minute))
	if b.View.Lease.PolicyGeneration != p.Generation || b.View.Lease.Fence <= a.View.Lease.Fence {
		t.Errorf("grant after the change: generation %d fence %d", b.View.Lease.PolicyGeneration, b.View.Lease.Fence)
	}
	d, err := reg().DeletePolicy(e.ctx, "rev/*")
	if err != nil {
		t.Fatalf("delete policy: %v", err)
	}
	if s := e.status(t, b); s.StatusClaims.State != fencegate.StateRevoked || s.StatusClaims.PolicyGeneration != d.Generation {
		t.Errorf("after a delete: state %s generation %d, want REVOKED %d", s.StatusClaims.State, s.StatusClaims.PolicyGeneration, d.Generation)
	}
	c := e.acquire(t, req("rev/r1", "owner-c", "pr-4", time.Minute))
	if c.View.Lease.PolicyGeneration != d.Generation {
		t.Errorf("grant under the tombstone: generation %d, want %d", c.View.Lease.PolicyGeneration, d.Generation)
	}
}
