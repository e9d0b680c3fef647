package registrytest

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/registry"
)

// testFenceMonotonic issues fences for one resource through every way a
// lease can end or be taken over, and checks (through env.record) that each
// fence is greater than every fence issued before and never issued twice.
func testFenceMonotonic(t *testing.T, e *env) {
	const res = "fence/r1"
	reg := e.registry

	// Release.
	a := e.acquire(t, req(res, "owner-a", "fm-1", time.Second))
	e.release(t, a)

	// Expiry (observed by the next acquire).
	b := e.acquire(t, req(res, "owner-b", "fm-2", time.Second))
	e.clock.Advance(time.Second)
	c := e.acquire(t, req(res, "owner-c", "fm-3", time.Second))
	if st := e.status(t, b); st.View.State != fencegate.StateExpired {
		t.Errorf("expired lease reads %s", st.View.State)
	}

	// Handoff to a waiting acquire on release.
	wreq := req(res, "owner-d", "fm-4", time.Second)
	wreq.Wait = 30 * time.Second
	ch := e.goAcquire(e.ctx, 0, wreq, nil)
	e.waitQueued(t, 1)
	e.release(t, c)
	e.granted(t, await(t, ch, "handoff on release"))

	// Handoff to a waiting acquire at expiry.
	wreq = req(res, "owner-f", "fm-5", time.Minute)
	wreq.Wait = 30 * time.Second
	ch = e.goAcquire(e.ctx, 0, wreq, nil)
	e.waitQueued(t, 1)
	e.clock.Advance(time.Second)
	f := e.granted(t, await(t, ch, "handoff at expiry"))

	// Policy change revokes the holder; the next acquire gets a new fence.
	if _, err := reg().PutPolicy(e.ctx, fencegate.Policy{Pattern: "fence/*"}); err != nil {
		t.Fatalf("put policy: %v", err)
	}
	if st := e.status(t, f); st.View.State != fencegate.StateRevoked {
		t.Errorf("lease under the old policy reads %s, want REVOKED", st.View.State)
	}
	g := e.acquire(t, req(res, "owner-g", "fm-6", time.Minute))

	// Epoch bump revokes the holder.
	if _, err := reg().BumpEpoch(e.ctx); err != nil {
		t.Fatalf("bump epoch: %v", err)
	}
	if st := e.status(t, g); st.View.State != fencegate.StateRevoked {
		t.Errorf("lease of the old epoch reads %s, want REVOKED", st.View.State)
	}
	h := e.acquire(t, req(res, "owner-h", "fm-7", time.Minute))
	e.release(t, h)

	// Idempotent replays never consume a fence.
	for _, old := range []registry.Result{a, b, h} {
		r := e.acquire(t, req(res, old.View.Lease.Owner, old.View.Lease.RequestID, time.Minute))
		if !r.Existing || !bytes.Equal(r.Grant, old.Grant) {
			t.Errorf("replay of %s: existing=%v, same grant=%v", old.View.Lease.RequestID, r.Existing, bytes.Equal(r.Grant, old.Grant))
		}
	}

	// Restarts (durable backends only).
	t.Run("restart", func(t *testing.T) {
		e.requireDurable(t)
		for i := range 3 {
			e.restart(t)
			r := e.acquire(t, req(res, "owner-r", "fm-restart-"+itoa(i), time.Second))
			if i%2 == 0 {
				e.release(t, r)
			} else {
				e.clock.Advance(time.Second)
			}
		}
	})

	fences := e.fences(res)
	if len(fences) < 7 {
		t.Fatalf("only %d fences recorded: %v", len(fences), fences)
	}
	if got := e.resource(t, res).Record.LastFence; got != fences[len(fences)-1] {
		t.Errorf("LastFence %d, last issued fence %d", got, fences[len(fences)-1])
	}
	t.Logf("fences of %s: %v", res, fences)
}

// testFenceFloor checks that global and per-resource floors make the next
// fence greater than the floor and that a lower floor lowers nothing.
func testFenceFloor(t *testing.T, e *env) {
	reg := e.registry
	floor := func(resource string, f uint64) (registry.Meta, registry.ResourceRecord) {
		t.Helper()
		m, rec, err := reg().RaiseFenceFloor(e.ctx, resource, f)
		if err != nil {
			t.Fatalf("raise floor of %q to %d: %v", resource, f, err)
		}
		return m, rec
	}
	take := func(resource, id string) registry.Result {
		t.Helper()
		r := e.acquire(t, req(resource, "owner-"+id, id, time.Minute))
		e.release(t, r)
		return r
	}

	a := take("floor/a", "ff-1")

	m, _ := floor("", 1000)
	if m.FenceFloor != 1000 || e.meta(t).FenceFloor != 1000 {
		t.Fatalf("global floor reads %d / %d, want 1000", m.FenceFloor, e.meta(t).FenceFloor)
	}
	if b := take("floor/b", "ff-2"); b.View.Lease.Fence <= 1000 {
		t.Errorf("new resource after global floor 1000: fence %d", b.View.Lease.Fence)
	}
	c := take("floor/a", "ff-3")
	if c.View.Lease.Fence <= 1000 || c.View.Lease.Fence <= a.View.Lease.Fence {
		t.Errorf("after global floor 1000: fence %d (previous %d)", c.View.Lease.Fence, a.View.Lease.Fence)
	}

	// A held lease is not disturbed by a floor.
	held := e.acquire(t, req("floor/a", "owner-held", "ff-4", time.Minute))
	_, rec := floor("floor/a", 5000)
	if rec.FenceFloor != 5000 || e.resource(t, "floor/a").Record.FenceFloor != 5000 {
		t.Fatalf("resource floor reads %d, want 5000", rec.FenceFloor)
	}
	if st := e.status(t, held); st.View.State != fencegate.StateHeld {
		t.Errorf("raising a floor changed the holder to %s", st.View.State)
	}
	e.release(t, held)
	d := take("floor/a", "ff-5")
	if d.View.Lease.Fence <= 5000 {
		t.Errorf("after resource floor 5000: fence %d", d.View.Lease.Fence)
	}
	if other := take("floor/b", "ff-6"); other.View.Lease.Fence > 5000 {
		t.Errorf("a resource floor leaked to another resource: fence %d", other.View.Lease.Fence)
	}

	// Lower floors lower nothing.
	before := e.snapshot(t, "floor/a", "floor/b")
	m, rec = floor("floor/a", 10)
	if rec.FenceFloor != 5000 || rec.LastFence != d.View.Lease.Fence {
		t.Errorf("lower resource floor: record %+v", rec)
	}
	m, _ = floor("", 10)
	if m.FenceFloor != 1000 {
		t.Errorf("lower global floor: global floor %d, want 1000", m.FenceFloor)
	}
	after := e.snapshot(t, "floor/a", "floor/b")
	if after.Meta.FenceFloor != before.Meta.FenceFloor ||
		after.Resources["floor/a"].Record.FenceFloor != before.Resources["floor/a"].Record.FenceFloor ||
		after.Resources["floor/a"].Record.LastFence != before.Resources["floor/a"].Record.LastFence ||
		after.Resources["floor/b"].Record != before.Resources["floor/b"].Record {
		t.Errorf("a lower floor changed the fences or floors:\nbefore %+v\nafter  %+v", before, after)
	}
	if next := take("floor/a", "ff-7"); next.View.Lease.Fence <= d.View.Lease.Fence {
		t.Errorf("after lower floors: fence %d, previous %d", next.View.Lease.Fence, d.View.Lease.Fence)
	}

	// A global floor between two resources' fences lifts only the lower one.
	floor("", 3000)
	if b := take("floor/b", "ff-8"); b.View.Lease.Fence <= 3000 {
		t.Errorf("after global floor 3000: floor/b fence %d", b.View.Lease.Fence)
	}
	// A floor set before a resource's first acquire.
	floor("floor/new", 7777)
	if n := take("floor/new", "ff-9"); n.View.Lease.Fence <= 7777 {
		t.Errorf("resource floor 7777 set before the first acquire: fence %d", n.View.Lease.Fence)
	}
}

// testFenceExhausted checks fences above 2^53 and the end of the sequence:
// the last fence is math.MaxUint64, exactly, and nothing follows it.
func testFenceExhausted(t *testing.T, e *env) {
	const res = "floor/max"
	if _, _, err := e.registry().RaiseFenceFloor(e.ctx, res, math.MaxUint64-1); err != nil {
		t.Fatalf("raise floor: %v", err)
	}
	last := e.acquire(t, req(res, "owner-a", "fx-1", time.Minute))
	if last.View.Lease.Fence != math.MaxUint64 {
		t.Fatalf("fence %d, want %d", last.View.Lease.Fence, uint64(math.MaxUint64))
	}
	e.release(t, last)
	before := e.snapshot(t, res)
	_, err := e.tryAcquire(t, req(res, "owner-b", "fx-2", time.Minute))
	wantErr(t, "acquire after the last fence", err, registry.ErrFenceExhausted)
	e.unchanged(t, "an exhausted acquire", before)

	// Exhausted from the start: the floor itself is the maximum.
	const res2 = "floor/max2"
	if _, _, err := e.registry().RaiseFenceFloor(e.ctx, res2, math.MaxUint64); err != nil {
		t.Fatalf("raise floor: %v", err)
	}
	before = e.snapshot(t, res2)
	_, err = e.tryAcquire(t, req(res2, "owner-b", "fx-3", time.Minute))
	wantErr(t, "acquire above a maximal floor", err, registry.ErrFenceExhausted)
	e.unchanged(t, "an exhausted acquire", before)
}
