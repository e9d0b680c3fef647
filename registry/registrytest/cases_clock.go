package registrytest

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/registry"
)

// The registry's time across processes (registry/time.go): two registry
// processes on one state, B's wall clock stepped away from A's (the env's
// clock stands for the true time), each with the default skew budget.

// clockBehindMetric is the gauge a process exports when it is behind the
// registry's time beyond its budget.
const clockBehindMetric = "fencegate_registry_clock_behind_seconds"

// steppedProcess is a second registry process on the env's state whose
// clock is the env's stepped by Step, with its own metrics.
func (e *env) steppedProcess(t *testing.T) (*registry.Registry, *SteppedClock, *prometheus.Registry) {
	t.Helper()
	be := e.backend()
	if e.opener.Shared != nil {
		var err error
		if be, err = e.opener.Shared(); err != nil {
			t.Fatalf("open a second process: %v", err)
		}
		t.Cleanup(func() { _ = be.Close() })
	}
	clk, metrics := NewSteppedClock(e.clock), prometheus.NewRegistry()
	return e.newRegistryOn(t, be, clk, metrics), clk, metrics
}

// testClockSteppedBack: a process whose clock is behind by less than the
// budget never answers HELD for a lease whose expiry another process's
// committed decisions have passed, refuses to renew it, and signs its
// grants no earlier than the registry's time, so the process ahead never
// sees them expire before their TTL ran on its own clock.
func testClockSteppedBack(t *testing.T, e *env) {
	const ttl = 2 * time.Second
	budget := registry.DefaultMaxClockSkew
	b, bClock, bMetrics := e.steppedProcess(t)
	bClock.Step(-(budget - 200*time.Millisecond)) // 800 ms behind

	held := e.acquire(t, req("clock/r1", "owner-a", "back-1", ttl))
	e.clock.Advance(ttl + 100*time.Millisecond)
	// A: 100 ms past the lease's expiry; B: 700 ms before it. Another
	// worker's grant at A commits A's time.
	e.acquire(t, req("clock/r2", "owner-x", "back-2", ttl))
	if st := e.status(t, held); st.View.State != fencegate.StateExpired {
		t.Fatalf("A reads the expired lease as %s", st.View.State)
	}
	aNow := e.clock.Now().UnixMilli()

	e.expiredAt(t, b, held, aNow, ttl)

	g, err := b.Acquire(e.ctx, req("clock/r1", "owner-b", "back-3", ttl))
	if err != nil {
		t.Fatalf("acquire at B: %v", err)
	}
	e.checkResult(t, g)
	if g.View.Lease.IssuedAt < aNow || g.View.Lease.Fence <= held.View.Lease.Fence {
		t.Errorf("B's grant: iat %d before the registry's time %d, or fence %d not above %d", g.View.Lease.IssuedAt, aNow, g.View.Lease.Fence, held.View.Lease.Fence)
	}
	e.clock.Advance(ttl - 100*time.Millisecond)
	if st := e.status(t, g); st.View.State != fencegate.StateHeld {
		t.Errorf("A reads B's grant %s %s after it was granted, before its TTL %s ran on A's clock", st.View.State, ttl-100*time.Millisecond, ttl)
	}
	if v := gauge(t, bMetrics, clockBehindMetric); v != 0 {
		t.Errorf("B within the budget: %s = %v, want 0", clockBehindMetric, v)
	}
}

// expiredAt checks that b, a process behind the registry's time aNow
// (Unix ms) within the budget, sees held, whose expiry aNow passed, as
// ended in every read (status, a sidecar's grant status, the resource)
// and refuses its renewal.
func (e *env) expiredAt(t *testing.T, b *registry.Registry, held registry.Result, aNow int64, ttl time.Duration) {
	t.Helper()
	st, err := b.Status(e.ctx, registry.LeaseQuery{Lease: held.View.Lease.Lease})
	if err != nil {
		t.Fatalf("status at B: %v", err)
	}
	e.checkResult(t, st)
	if st.View.State != fencegate.StateExpired || int64(st.StatusClaims.IssuedAt) < aNow {
		t.Errorf("B, 800 ms behind, reads the lease A found expired as %s, proof iat %d (A's time %d)", st.View.State, st.StatusClaims.IssuedAt, aNow)
	}
	if gs, err := b.GrantStatus(e.ctx, held.View.Lease.Digest); err != nil || gs.View.State != fencegate.StateExpired {
		t.Errorf("B's grant status (a sidecar's read) of the lease A found expired: %s, %v", gs.View.State, err)
	}
	if v, err := b.Resource(e.ctx, "clock/r1"); err != nil || v.Holder == nil || v.Holder.State != fencegate.StateExpired {
		t.Errorf("B's resource read shows the holder A found expired as %+v, %v", v.Holder, err)
	}
	if res, err := b.Renew(e.ctx, "owner-a", held.View.Lease.Lease, ttl); !errors.Is(err, registry.ErrNotHeld) {
		t.Errorf("B renewed the lease A found expired: %v (state %s, expires %d)", err, res.View.State, res.View.Lease.ExpiresAt)
	}
}

// testClockSteppedForward: a process whose clock was stepped far ahead
// (an hour) signs its own grants on its clock, but never drags the other
// processes' grants and proofs more than the budget past their clocks; a
// process behind the registry's time beyond the budget says so in its
// metric, and still serves (nothing can lower the registry's time, so
// nothing may depend on it coming back).
func testClockSteppedForward(t *testing.T, e *env) {
	const ttl = 2 * time.Second
	budget := registry.DefaultMaxClockSkew
	aMetrics := prometheus.NewRegistry()
	a := e.newRegistryOn(t, e.backend(), e.clock, aMetrics)
	b, bClock, bMetrics := e.steppedProcess(t)
	bClock.Step(time.Hour)

	ahead, err := b.Acquire(e.ctx, req("clock/f1", "owner-b", "fwd-1", ttl))
	if err != nil {
		t.Fatalf("acquire at B: %v", err)
	}
	if want := bClock.Now().UnixMilli(); ahead.View.Lease.IssuedAt != want {
		t.Errorf("B's own grant iat %d, want its clock %d", ahead.View.Lease.IssuedAt, want)
	}

	aNow := e.clock.Now()
	g, err := a.Acquire(e.ctx, req("clock/f2", "owner-a", "fwd-2", ttl))
	if err != nil {
		t.Fatalf("acquire at A: %v", err)
	}
	e.checkResult(t, g)
	limit := aNow.Add(budget).UnixMilli()
	if l := g.View.Lease; l.IssuedAt != limit || l.ExpiresAt != limit+ttl.Milliseconds() || int64(g.StatusClaims.IssuedAt) != limit {
		t.Errorf("A's grant after B's: iat %d exp %d proof iat %d; want at most A's clock plus the budget (%d) and its TTL", l.IssuedAt, l.ExpiresAt, g.StatusClaims.IssuedAt, limit)
	}
	if v, want := gauge(t, aMetrics, clockBehindMetric), (time.Hour - budget).Seconds(); v != want {
		t.Errorf("A an hour behind the registry's time: %s = %v, want %v", clockBehindMetric, v, want)
	}
	st, err := a.Status(e.ctx, registry.LeaseQuery{Lease: ahead.View.Lease.Lease})
	if err != nil || st.View.State != fencegate.StateHeld || int64(st.StatusClaims.IssuedAt) != limit {
		t.Errorf("A's proof of B's grant: %s iat %d, %v; want HELD at %d", st.View.State, st.StatusClaims.IssuedAt, err, limit)
	}

	// B's clock is put right: now both are behind the registry's time;
	// both serve, fences go on above every fence issued.
	bClock.Step(0)
	next, err := b.Acquire(e.ctx, req("clock/f2", "owner-c", "fwd-3", ttl))
	if !errors.Is(err, registry.ErrLeaseHeld) {
		t.Errorf("B, put right, acquires A's held resource: %v (%+v)", err, next.View.Lease)
	}
	e.clock.Advance(budget + ttl)
	next, err = b.Acquire(e.ctx, req("clock/f2", "owner-c", "fwd-4", ttl))
	if err != nil || next.View.Lease.Fence <= g.View.Lease.Fence {
		t.Fatalf("B after A's lease ran out: %v, fence %d after %d", err, next.View.Lease.Fence, g.View.Lease.Fence)
	}
	if v := gauge(t, bMetrics, clockBehindMetric); v <= 0 {
		t.Errorf("B behind the registry's time its old clock wrote: %s = %v, want > 0", clockBehindMetric, v)
	}
}

// testClockSteppedBackAcrossRestart: a durable registry restarted with
// its clock stepped back (within the budget) reads the registry's time
// from its data: a lease whose expiry its decisions before the restart
// passed is not HELD again, and is not renewed.
func testClockSteppedBackAcrossRestart(t *testing.T, e *env) {
	e.requireDurable(t)
	const ttl = 2 * time.Second
	held := e.acquire(t, req("clock/restart", "owner-a", "rs-1", ttl))
	e.clock.Advance(ttl + 100*time.Millisecond)
	e.acquire(t, req("clock/restart2", "owner-x", "rs-2", ttl)) // commits the time
	e.restart(t)
	clk := NewSteppedClock(e.clock)
	clk.Step(-(registry.DefaultMaxClockSkew - 200*time.Millisecond)) // back to before the expiry
	reg := e.newRegistryOn(t, e.backend(), clk, prometheus.NewRegistry())
	st, err := reg.Status(e.ctx, registry.LeaseQuery{Lease: held.View.Lease.Lease})
	if err != nil || st.View.State != fencegate.StateExpired {
		t.Errorf("after a restart 800 ms back, the expired lease reads %s, %v", st.View.State, err)
	}
	if _, err := reg.Renew(e.ctx, "owner-a", held.View.Lease.Lease, ttl); !errors.Is(err, registry.ErrNotHeld) {
		t.Errorf("after a restart 800 ms back, the expired lease was renewed: %v", err)
	}
}

// gauge reads the value of the gauge name from g (failing t when absent).
func gauge(t *testing.T, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}
