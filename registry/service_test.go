package registry_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock/clocktest"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/memory"
	"github.com/fencegate/fencegate/registry/registrytest"
)

// newService is a Registry over a new memory backend whose clock stands
// still at now.
func newService(t *testing.T, now time.Time) (*registry.Registry, *prometheus.Registry) {
	t.Helper()
	be := memory.NewBackend()
	t.Cleanup(func() { be.Close() })
	prom := prometheus.NewRegistry()
	reg, err := registry.New(registry.Options{Backend: be, Signer: registrytest.NewKeys(t).Signer,
		Clock: clocktest.New(now), Metrics: prom})
	if err != nil {
		t.Fatal(err)
	}
	return reg, prom
}

func counter(t *testing.T, prom *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := prom.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

// A release repeated within the same millisecond is not another release:
// fencegate_registry_releases_total counts the leases released, once each.
// (The service used to infer "this call released it" from the lease's end
// time equalling now, so a retry in the same millisecond counted and
// logged twice; the decision now says so: ReleaseResult.Released.)
func TestReleaseCountedOnce(t *testing.T) {
	reg, prom := newService(t, t0)
	ctx := context.Background()
	a, err := reg.Acquire(ctx, registry.AcquireRequest{Resource: "r", Owner: "o", RequestID: "q-1"})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		r, err := reg.Release(ctx, "o", a.View.Lease.Lease)
		if err != nil || r.View.State != fencegate.StateReleased {
			t.Fatalf("release: %s, %v", r.View.State, err)
		}
	}
	if got := counter(t, prom, "fencegate_registry_releases_total"); got != 1 {
		t.Errorf("releases_total %v after one release and its retry, want 1", got)
	}
}

// A registry that has written nothing yet is at issuer epoch 1, as its
// proofs and grants say: Meta (GET /v1/admin/meta) used to read 0 there.
func TestMetaOfNewRegistry(t *testing.T) {
	reg, _ := newService(t, t0)
	m, err := reg.Meta(context.Background())
	if err != nil || m.IssuerEpoch != 1 {
		t.Errorf("meta of a new registry: %+v, %v; want issuer epoch 1", m, err)
	}
}

// TestProofClaims: a proof's lifetime is bounded by the maximum proof TTL
// and, for a HELD lease, by the lease's expiry; a proof of any other state
// is not bounded by the (past) expiry.
func TestProofClaims(t *testing.T) {
	l := held() // expires t0+1s
	for _, c := range []struct {
		name  string
		state string
		now   time.Time
		exp   int64
	}{
		{"held, lease outlives the max", fencegate.StateHeld, t0, t0.UnixMilli() + 500},
		{"held, lease expires first", fencegate.StateHeld, t0.Add(800 * time.Millisecond), t0.UnixMilli() + 1000},
		{"expired", fencegate.StateExpired, t0.Add(time.Hour), t0.Add(time.Hour).UnixMilli() + 500},
	} {
		v := registry.LeaseView{Lease: l, State: c.state, Meta: registry.Meta{IssuerEpoch: 2, Revision: 50}, PolicyGeneration: 3}
		st := registry.ProofClaims(v, "iss", c.now, 500*time.Millisecond)
		if int64(st.ExpiresAt) != c.exp || int64(st.IssuedAt) != c.now.UnixMilli() || st.State != c.state || st.GrantDigest != l.Digest ||
			st.FenceToken != 7 || st.BackendRevision != 50 || st.IssuerEpoch != 2 || st.PolicyGeneration != 3 || st.Issuer != "iss" {
			t.Errorf("%s: %+v, want exp %d", c.name, st, c.exp)
		}
	}
}
