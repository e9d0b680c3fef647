package registry_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock/clocktest"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/memory"
	"github.com/fencegate/fencegate/registry/registrytest"
)

// TestDecisionTime: a step decides at its clock raised toward the
// registry's time by at most the budget.
func TestDecisionTime(t *testing.T) {
	const budget = time.Second
	at := func(d time.Duration) registry.Meta { return registry.Meta{Time: t0.Add(d).UnixMilli()} }
	for _, c := range []struct {
		name   string
		m      registry.Meta
		budget time.Duration
		want   time.Time
	}{
		{"no registry time yet", registry.Meta{}, budget, t0},
		{"clock ahead of the registry's time", at(-time.Minute), budget, t0},
		{"clock at the registry's time", at(0), budget, t0},
		{"behind within the budget: the registry's time", at(700 * time.Millisecond), budget, t0.Add(700 * time.Millisecond)},
		{"behind by the budget", at(budget), budget, t0.Add(budget)},
		{"behind beyond the budget: clock plus the budget", at(time.Hour), budget, t0.Add(budget)},
		{"no budget: the clock", at(time.Hour), 0, t0},
	} {
		if got := registry.DecisionTime(t0, c.m, c.budget); !got.Equal(c.want) {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
		want := max(0, time.UnixMilli(c.m.Time).Sub(t0)-max(0, c.budget))
		if got := registry.ClockBehind(t0, c.m, c.budget); got != want {
			t.Errorf("%s: behind %s, want %s", c.name, got, want)
		}
	}
	// Sub-millisecond clocks: never before the clock.
	local := t0.Add(300 * time.Microsecond)
	if got := registry.DecisionTime(local, registry.Meta{Time: t0.UnixMilli()}, budget); !got.Equal(local) {
		t.Errorf("registry time in the clock's millisecond: %s, want %s", got, local)
	}
}

// behindSnap is leaseSnap with the registry's time past the lease's
// expiry (t0+1s) at t0+1.2s, decided on a clock reading t0+0.5s: 700 ms
// behind, within a 1s budget.
func behindSnap() (registry.LeaseSnapshot, time.Time, time.Time) {
	snap := leaseSnap()
	regTime := t0.Add(1200 * time.Millisecond)
	snap.Meta.Time = regTime.UnixMilli()
	return snap, t0.Add(500 * time.Millisecond), regTime
}

// TestDecisionsAtRegistryTime: every lease decision and view of a process
// behind the registry's time within the budget decides at that time: a
// lease whose expiry it passed is not HELD, is not renewed, and the
// resource is granted with iat at the registry's time. With no budget the
// same snapshots answer HELD (what the bound prevents).
func TestDecisionsAtRegistryTime(t *testing.T) {
	for _, budget := range []time.Duration{time.Second, 0} {
		snap, local, regTime := behindSnap()
		want, wantAt := fencegate.StateExpired, regTime
		if budget == 0 {
			want, wantAt = fencegate.StateHeld, local
		}
		v, err := registry.DecideStatus(snap, registry.LeaseQuery{Lease: "lease-7", Now: local, MaxSkew: budget})
		if err != nil || v.State != want || !v.At.Equal(wantAt) {
			t.Errorf("budget %s: status %s at %s, %v; want %s at %s", budget, v.State, v.At, err, want, wantAt)
		}
		rn, _, err := registry.DecideRenew(snap, registry.RenewInput{Lease: "lease-7", Owner: "owner-a", Now: local, MaxSkew: budget})
		if err != nil || rn.NotHeld != (budget > 0) {
			t.Errorf("budget %s: renew notHeld %v, %v", budget, rn.NotHeld, err)
		}
		rl, _, err := registry.DecideRelease(snap, registry.ReleaseInput{Lease: "lease-7", Owner: "owner-a", Now: local, MaxSkew: budget})
		if err != nil || rl.Released == (budget > 0) || rl.View.State == fencegate.StateReleased == (budget > 0) {
			t.Errorf("budget %s: release %+v, %v", budget, rl, err)
		}
		rv, _, err := registry.DecideRevoke(snap, registry.RevokeInput{Lease: "lease-7", Now: local, MaxSkew: budget})
		if err != nil || rv.Revoked == (budget > 0) {
			t.Errorf("budget %s: revoke %+v, %v", budget, rv, err)
		}
		ls := registry.LeasesSnapshot{Meta: snap.Meta, Policies: []fencegate.Policy{snap.Policy}, Leases: []registry.LeaseRecord{*snap.Lease}}
		page, err := registry.DecideLeases(ls, registry.LeasesQuery{State: fencegate.StateHeld, Limit: 10, Now: local, MaxSkew: budget})
		if err != nil || (len(page.Leases) == 0) != (budget > 0) {
			t.Errorf("budget %s: HELD listing %+v, %v", budget, page.Leases, err)
		}

		as := acquireSnap()
		as.Meta.Time = snap.Meta.Time
		in := acquireIn("owner-b", "req-b")
		in.Now, in.MaxSkew = local, budget
		res, ch, err := registry.DecideAcquire(as, in)
		switch {
		case err != nil:
			t.Errorf("budget %s: acquire: %v", budget, err)
		case budget == 0:
			if !res.Busy {
				t.Errorf("budget 0: acquire %+v, want busy (the control)", res)
			}
		case !res.Granted || !res.At.Equal(regTime) || ch.Grant.IssuedAt != regTime.UnixMilli() || ch.Meta.Time != regTime.UnixMilli() ||
			res.Ended == nil || res.Ended.EndedAt != held().ExpiresAt:
			t.Errorf("acquire behind the registry's time: %+v, change %+v", res, ch)
		}
	}
}

// TestDecisionsBeyondBudget: a process behind the registry's time by more
// than the budget decides at its clock plus the budget (what it can do:
// nothing lowers the registry's time, so refusing would stop every
// process for as long as the excess), and never lowers the registry's
// time it writes.
func TestDecisionsBeyondBudget(t *testing.T) {
	snap := leaseSnap()
	snap.Lease.ExpiresAt = t0.Add(1500 * time.Millisecond).UnixMilli()
	regTime := t0.Add(time.Hour)
	snap.Meta.Time = regTime.UnixMilli()
	in := registry.RenewInput{Lease: "lease-7", Owner: "owner-a", TTL: time.Second, Now: t0, MaxSkew: time.Second}
	res, ch, err := registry.DecideRenew(snap, in)
	if err != nil || res.NotHeld || !res.View.At.Equal(t0.Add(time.Second)) || res.View.Lease.ExpiresAt != t0.Add(2*time.Second).UnixMilli() {
		t.Fatalf("renew an hour behind: %+v, %v; want renewed at the clock plus the budget", res, err)
	}
	if ch.Meta == nil || ch.Meta.Time != regTime.UnixMilli() {
		t.Errorf("renew an hour behind wrote the registry's time %+v, want it kept at %d", ch.Meta, regTime.UnixMilli())
	}
}

// TestEveryLeaseWriteRaisesTime: each decision that writes lease state or
// a policy raises the registry's time to its decision time; the writes
// that take no time keep it.
func TestEveryLeaseWriteRaisesTime(t *testing.T) {
	local := t0.Add(300 * time.Millisecond)
	want := local.UnixMilli()
	check := func(what string, ch registry.Change, err error) {
		t.Helper()
		if err != nil || ch.Meta == nil || ch.Meta.Time != want {
			t.Errorf("%s: change meta %+v, %v; want time %d", what, ch.Meta, err, want)
		}
	}
	snap := leaseSnap()
	snap.Meta.Time = t0.UnixMilli()
	_, ch, err := registry.DecideRenew(snap, registry.RenewInput{Lease: "lease-7", Owner: "owner-a", Now: local})
	check("renew", ch, err)
	_, ch, err = registry.DecideRelease(snap, registry.ReleaseInput{Lease: "lease-7", Owner: "owner-a", Now: local})
	check("release", ch, err)
	_, ch, err = registry.DecideRevoke(snap, registry.RevokeInput{Lease: "lease-7", Now: local})
	check("revoke", ch, err)
	late := leaseSnap()
	late.Meta.Time = t0.UnixMilli()
	_, ch, err = registry.DecideRenew(late, registry.RenewInput{Lease: "lease-7", Owner: "owner-a", Now: t0.Add(time.Hour)})
	want = t0.Add(time.Hour).UnixMilli()
	check("refused renewal (observed expiry)", ch, err)
	want = local.UnixMilli()
	as := acquireSnap()
	as.Holder = nil
	as.Resource.Holder = ""
	in := acquireIn("owner-b", "req-b")
	in.Now = local
	_, ch, err = registry.DecideAcquire(as, in)
	check("grant", ch, err)
	_, ch, err = registry.DecidePutPolicy(snap.Meta, fencegate.Policy{Pattern: "r"}, local)
	check("put policy", ch, err)

	m := registry.Meta{IssuerEpoch: 2, Time: want}
	if got, _, _ := registry.DecideBumpEpoch(m); got.Time != want {
		t.Errorf("epoch bump changed the time: %d", got.Time)
	}
	if got, _, _, _ := registry.DecideFenceFloor(registry.FenceFloorSnapshot{Meta: m}, registry.FenceFloorInput{Floor: 9}); got.Time != want {
		t.Errorf("fence floor changed the time: %d", got.Time)
	}
	if got, _, _ := registry.DecideInit(m, registry.InitInput{Lineage: candidateLineage, FenceFloor: 3}); got.Time != want {
		t.Errorf("init changed the time: %d", got.Time)
	}
}

// TestRegistryClockBehind: a process behind the registry's time beyond
// its budget logs it once (an error), exports the excess, keeps serving,
// and logs again when it is back within the budget.
func TestRegistryClockBehind(t *testing.T) {
	k := registrytest.NewKeys(t)
	be := memory.NewBackend()
	defer be.Close()
	base := clocktest.New(time.Time{})
	bClock := registrytest.NewSteppedClock(base)
	core, logs := observer.New(zapcore.InfoLevel)
	metrics := prometheus.NewRegistry()
	a, err := registry.New(registry.Options{Backend: be, Signer: k.Signer, Clock: base})
	if err != nil {
		t.Fatal(err)
	}
	b, err := registry.New(registry.Options{Backend: be, Signer: k.Signer, Clock: bClock, Logger: zap.New(core), Metrics: metrics})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	bClock.Step(-5 * time.Second)
	if _, err := a.Acquire(ctx, registry.AcquireRequest{Resource: "behind/r", Owner: "o", RequestID: "1"}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := b.Resource(ctx, "behind/r"); err != nil {
			t.Fatalf("read %d at B: %v", i, err)
		}
	}
	if v := gaugeValue(t, metrics, "fencegate_registry_clock_behind_seconds"); v != 4 {
		t.Errorf("5 s behind with a 1 s budget: gauge %v, want 4", v)
	}
	if n := logs.FilterLevelExact(zapcore.ErrorLevel).Len(); n != 1 {
		t.Errorf("%d error logs for two steps behind, want 1 (at the start)", n)
	}
	bClock.Step(-500 * time.Millisecond)
	if _, err := b.Acquire(ctx, registry.AcquireRequest{Resource: "behind/r2", Owner: "o", RequestID: "2"}); err != nil {
		t.Fatal(err)
	}
	if v := gaugeValue(t, metrics, "fencegate_registry_clock_behind_seconds"); v != 0 {
		t.Errorf("500 ms behind: gauge %v, want 0", v)
	}
	if n := logs.FilterMessageSnippet("back within").Len(); n != 1 {
		t.Errorf("%d logs of the clock back within the budget, want 1", n)
	}
}

func gaugeValue(t *testing.T, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
