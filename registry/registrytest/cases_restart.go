package registrytest

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/registry"
)

// testRestart checks that a reopened backend has every fence, floor,
// epoch, policy, lease and request index it had, that held leases stay
// held and replay identically, and that new fences continue above the old.
func testRestart(t *testing.T, e *env) {
	e.requireDurable(t)
	reg := e.registry
	if _, err := reg().BumpEpoch(e.ctx); err != nil {
		t.Fatalf("bump epoch: %v", err)
	}
	if _, err := reg().PutPolicy(e.ctx, fencegate.Policy{Pattern: "restart/p/*", MaxTTLMs: 60000}); err != nil {
		t.Fatalf("put policy: %v", err)
	}
	if _, _, err := reg().RaiseFenceFloor(e.ctx, "restart/r4", 77); err != nil {
		t.Fatalf("raise floor: %v", err)
	}
	short := e.acquire(t, req("restart/r3", "owner-a", "rs-3", time.Second))
	e.clock.Advance(time.Second)
	held := e.acquire(t, req("restart/r1", "owner-a", "rs-1", time.Minute))
	rel := e.acquire(t, req("restart/r2", "owner-a", "rs-2", time.Minute))
	e.release(t, rel)
	pol := e.acquire(t, req("restart/p/r5", "owner-a", "rs-5", time.Minute))
	names := []string{"restart/r1", "restart/r2", "restart/r3", "restart/r4", "restart/p/r5"}
	before := e.snapshot(t, names...)

	e.restart(t)
	e.unchanged(t, "a restart", before)

	for _, c := range []struct {
		r     registry.Result
		state string
	}{{held, fencegate.StateHeld}, {rel, fencegate.StateReleased}, {short, fencegate.StateExpired}, {pol, fencegate.StateHeld}} {
		l := c.r.View.Lease
		again := e.acquire(t, req(l.Resource, l.Owner, l.RequestID, time.Minute))
		if !again.Existing || !bytes.Equal(again.Grant, c.r.Grant) || again.View.State != c.state {
			t.Errorf("replay of %s after restart: existing=%v same grant=%v state %s, want %s",
				l.RequestID, again.Existing, bytes.Equal(again.Grant, c.r.Grant), again.View.State, c.state)
		}
		st, err := reg().Status(e.ctx, registry.LeaseQuery{Digest: l.Digest})
		if err != nil || st.View.Lease.Lease != l.Lease {
			t.Errorf("lookup by digest after restart: %v", err)
		}
	}
	_, err := e.tryAcquire(t, req("restart/r1", "owner-b", "rs-6", time.Minute))
	wantBusy(t, "acquire of a lease held before the restart", err, "restart/r1")
	_, err = e.tryAcquire(t, req("restart/p/r6", "owner-b", "rs-7", 2*time.Minute))
	wantErr(t, "policy after restart", err, registry.ErrPolicyDenied)

	e.release(t, held)
	e.release(t, pol)
	for i, name := range names {
		r := e.acquire(t, req(name, "owner-c", "rs-new-"+itoa(i), time.Minute))
		old := before.Resources[name].Record.LastFence
		if r.View.Lease.Fence <= old || r.View.Lease.IssuerEpoch != before.Meta.IssuerEpoch {
			t.Errorf("%s after restart: fence %d (before %d) epoch %d", name, r.View.Lease.Fence, old, r.View.Lease.IssuerEpoch)
		}
		if name == "restart/r4" && r.View.Lease.Fence <= 77 {
			t.Errorf("floor lost across restart: fence %d", r.View.Lease.Fence)
		}
		if name == "restart/r1" {
			continue // still held by owner-c: held across the next restart
		}
		e.release(t, r)
	}

	// A second restart keeps the lease held across it.
	v := e.resource(t, "restart/r1")
	e.restart(t)
	if got := e.resource(t, "restart/r1"); got.Holder == nil || got.Holder.State != fencegate.StateHeld || got.Record != v.Record {
		t.Errorf("holder across the second restart: %+v", got)
	}
}

// testClosed checks that a closed backend refuses every call with
// registry.ErrClosed.
func testClosed(t *testing.T, e *env) {
	e.acquire(t, req("closed/r1", "owner-a", "cl-1", time.Minute))
	e.mu.Lock()
	be := e.be
	e.be = nil
	e.mu.Unlock()
	if err := be.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	_, err := be.Meta(e.ctx)
	wantErr(t, "meta of a closed backend", err, registry.ErrClosed)
	_, err = e.registry().Acquire(e.ctx, req("closed/r2", "owner-a", "cl-2", time.Minute))
	wantErr(t, "acquire on a closed backend", err, registry.ErrClosed)
	_, err = e.registry().Status(e.ctx, registry.LeaseQuery{Owner: "owner-a", RequestID: "cl-1"})
	wantErr(t, "status on a closed backend", err, registry.ErrClosed)
	if err := e.registry().Ready(e.ctx); !errors.Is(err, registry.ErrClosed) {
		t.Errorf("Ready on a closed backend: %v", err)
	}
}
