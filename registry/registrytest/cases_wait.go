package registrytest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/registry"
)

// waitReq is a waiting acquire with a one-minute TTL.
func waitReq(resource, owner, requestID string, wait time.Duration) registry.AcquireRequest {
	r := req(resource, owner, requestID, time.Minute)
	r.Wait = wait
	return r
}

// settle gives a goroutine that should stay blocked a moment of real time
// to (wrongly) return, so pending can catch it. It asserts nothing about
// durations.
func settle() { pause(20 * time.Millisecond) }

// testWaitHandoffOnRelease checks that a waiting acquire gets the lease
// the moment the holder releases it, with no clock movement.
func testWaitHandoffOnRelease(t *testing.T, e *env) {
	const res = "wait/release"
	h := e.acquire(t, req(res, "owner-h", "wr-1", time.Minute))
	ch := e.goAcquire(e.ctx, 0, waitReq(res, "owner-w", "wr-2", 30*time.Second), nil)
	e.waitQueued(t, 1)
	settle()
	pending(t, ch, "a waiting acquire while the lease is held")

	before := e.clock.Now()
	e.release(t, h)
	w := e.granted(t, await(t, ch, "the handoff on release"))
	if !e.clock.Now().Equal(before) || w.View.Lease.IssuedAt != ms(before) {
		t.Errorf("handoff at %d, release at %d", w.View.Lease.IssuedAt, ms(before))
	}
	if w.View.Lease.Fence <= h.View.Lease.Fence {
		t.Errorf("handoff fence %d, holder's %d", w.View.Lease.Fence, h.View.Lease.Fence)
	}
	e.waitQueued(t, 0)
}

// testWaitHandoffOnExpiry checks that a waiting acquire wakes when the
// clock passes the holder's expiry, and not before.
func testWaitHandoffOnExpiry(t *testing.T, e *env) {
	const res = "wait/expiry"
	h := e.acquire(t, req(res, "owner-h", "we-1", time.Second))
	armed := e.clock.Armed()
	ch := e.goAcquire(e.ctx, 0, waitReq(res, "owner-w", "we-2", 30*time.Second), nil)
	e.waitQueued(t, 1)
	// The waiter arms its deadline and, after finding the lease held, a
	// timer for the holder's expiry. Wait for both when the implementation
	// does so; the assertions below hold either way.
	waitArmed(e.ctx, e.clock, armed+2, time.Second)

	e.clock.Advance(999 * time.Millisecond)
	settle()
	pending(t, ch, "a waiting acquire before the holder's expiry")

	e.clock.Advance(time.Millisecond)
	w := e.granted(t, await(t, ch, "the handoff at expiry"))
	if w.View.Lease.IssuedAt != h.View.Lease.ExpiresAt {
		t.Errorf("handoff at %d, holder expired at %d", w.View.Lease.IssuedAt, h.View.Lease.ExpiresAt)
	}
	if st := e.status(t, h); st.View.State != fencegate.StateExpired || st.View.Lease.EndedAt != h.View.Lease.ExpiresAt {
		t.Errorf("old holder: state %s endedAt %d", st.View.State, st.View.Lease.EndedAt)
	}
	e.waitQueued(t, 0)
}

// testWaitFIFO checks that waiters are served in arrival order.
func testWaitFIFO(t *testing.T, e *env) {
	const res = "wait/fifo"
	const n = 4
	h := e.acquire(t, req(res, "owner-h", "wf-h", time.Minute))
	out := make(chan outcome, n)
	for i := range n {
		e.goAcquire(e.ctx, i, waitReq(res, "owner-w"+itoa(i), "wf-"+itoa(i), 30*time.Second), out)
		e.waitQueued(t, i+1)
	}
	settle()
	select {
	case o := <-out:
		t.Fatalf("waiter %d returned while the lease is held: %v", o.idx, o.err)
	default:
	}
	prev := h
	e.release(t, h)
	for i := range n {
		o := await(t, out, "waiter "+itoa(i))
		if o.idx != i {
			t.Fatalf("waiter %d served before waiter %d", o.idx, i)
		}
		w := e.granted(t, o)
		if w.View.Lease.Fence <= prev.View.Lease.Fence {
			t.Errorf("waiter %d fence %d after %d", i, w.View.Lease.Fence, prev.View.Lease.Fence)
		}
		e.waitQueued(t, n-1-i)
		settle()
		select {
		case o := <-out:
			t.Fatalf("waiter %d returned while waiter %d holds the lease: %v", o.idx, i, o.err)
		default:
		}
		e.release(t, w)
		prev = w
	}
}

// testWaitTimeout checks that a waiter whose wait runs out gets a
// *registry.BusyError (ErrLeaseHeld) naming the holder's expiry, and that
// a busy answer writes nothing.
func testWaitTimeout(t *testing.T, e *env) {
	const res = "wait/timeout"
	h := e.acquire(t, req(res, "owner-h", "wt-1", 30*time.Second))

	before := e.snapshot(t, res)
	_, err := e.tryAcquire(t, req(res, "owner-w", "wt-2", time.Minute))
	be := wantBusy(t, "non-waiting acquire of a held lease", err, res)
	if !be.HolderExpiresAt.Equal(time.UnixMilli(h.View.Lease.ExpiresAt)) {
		t.Errorf("BusyError says the holder expires at %s, lease says %d", be.HolderExpiresAt, h.View.Lease.ExpiresAt)
	}

	ch := e.goAcquire(e.ctx, 0, waitReq(res, "owner-w", "wt-2", 2*time.Second), nil)
	e.waitQueued(t, 1)
	e.clock.Advance(1999 * time.Millisecond)
	settle()
	pending(t, ch, "a waiting acquire before its wait ran out")
	e.clock.Advance(time.Millisecond)
	o := await(t, ch, "the waiter's timeout")
	be = wantBusy(t, "waiting acquire whose wait ran out", o.err, res)
	if !be.HolderExpiresAt.Equal(time.UnixMilli(h.View.Lease.ExpiresAt)) {
		t.Errorf("BusyError says the holder expires at %s, lease says %d", be.HolderExpiresAt, h.View.Lease.ExpiresAt)
	}
	e.waitQueued(t, 0)
	e.unchanged(t, "busy acquires", before)
	if _, err := e.backend().Lease(e.ctx, registry.LeaseQuery{Owner: "owner-w", RequestID: "wt-2", Now: e.clock.Now()}); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("a busy acquire recorded its request ID: %v", err)
	}
}

// testWaitCancel checks that a cancelled waiter leaves the queue and the
// next one moves up.
func testWaitCancel(t *testing.T, e *env) {
	const res = "wait/cancel"
	h := e.acquire(t, req(res, "owner-h", "wc-h", time.Minute))
	ctx1, cancel1 := context.WithCancel(e.ctx)
	defer cancel1()
	ch1 := e.goAcquire(ctx1, 1, waitReq(res, "owner-w1", "wc-1", 30*time.Second), nil)
	e.waitQueued(t, 1)
	ch2 := e.goAcquire(e.ctx, 2, waitReq(res, "owner-w2", "wc-2", 30*time.Second), nil)
	e.waitQueued(t, 2)

	cancel1()
	o := await(t, ch1, "the cancelled waiter")
	wantErr(t, "cancelled waiter", o.err, context.Canceled)
	e.waitQueued(t, 1)
	pending(t, ch2, "the second waiter")

	e.release(t, h)
	e.granted(t, await(t, ch2, "the handoff to the second waiter"))
	e.waitQueued(t, 0)
}

// testWaitWakesOnRevocation checks that a waiter gets the lease at once
// when the holder is revoked by an epoch bump or a policy change.
func testWaitWakesOnRevocation(t *testing.T, e *env) {
	const res = "wait/revoke"
	reg := e.registry
	h := e.acquire(t, req(res, "owner-h", "wv-h", time.Minute))

	ch := e.goAcquire(e.ctx, 0, waitReq(res, "owner-w1", "wv-1", 30*time.Second), nil)
	e.waitQueued(t, 1)
	m, err := reg().BumpEpoch(e.ctx)
	if err != nil {
		t.Fatalf("bump epoch: %v", err)
	}
	w1 := e.granted(t, await(t, ch, "the handoff after an epoch bump"))
	if w1.View.Lease.IssuerEpoch != m.IssuerEpoch || w1.View.Lease.Fence <= h.View.Lease.Fence {
		t.Errorf("after the bump: epoch %d (want %d), fence %d", w1.View.Lease.IssuerEpoch, m.IssuerEpoch, w1.View.Lease.Fence)
	}
	if st := e.status(t, h); st.View.State != fencegate.StateRevoked {
		t.Errorf("old holder after the bump: %s", st.View.State)
	}

	ch = e.goAcquire(e.ctx, 0, waitReq(res, "owner-w2", "wv-2", 30*time.Second), nil)
	e.waitQueued(t, 1)
	p, err := reg().PutPolicy(e.ctx, fencegate.Policy{Pattern: res})
	if err != nil {
		t.Fatalf("put policy: %v", err)
	}
	w2 := e.granted(t, await(t, ch, "the handoff after a policy change"))
	if w2.View.Lease.PolicyGeneration != p.Generation || w2.View.Lease.Fence <= w1.View.Lease.Fence {
		t.Errorf("after the policy change: generation %d (want %d), fence %d", w2.View.Lease.PolicyGeneration, p.Generation, w2.View.Lease.Fence)
	}
	if st := e.status(t, w1); st.View.State != fencegate.StateRevoked {
		t.Errorf("holder under the old policy: %s", st.View.State)
	}
}
