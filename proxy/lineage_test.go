package proxy_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/proxy"
	"github.com/fencegate/fencegate/proxy/adminapi"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/memory"
	"github.com/fencegate/fencegate/registry/registrytest"
	"github.com/fencegate/fencegate/store"
)

// TestFreshRegistryBelowCompactedFences is issue 19's story 7 at the
// sidecar: the old registry's fences 1-4 were accepted and compaction
// deleted the receipts of 1-3; then a fresh registry (an empty data set:
// a new issuer lineage, the same signing key) issues fence 1. No receipt
// shows that fence 1 was issued twice, yet the sidecar answers
// FENCE_REGRESSION and pauses the resource (it was STALE_OWNER before the
// sidecar passed the grant's lineage to the store: a rejection telling the
// new owner to stop for good, and no alarm). After the procedure (the
// floor from GET /v1/fences, the epoch bumped, the pause resumed) the new
// registry's grant is above every fence accepted and is accepted; the old
// registry's last grant is then EPOCH_REVOKED, and, at a sidecar restarted
// since (which forgot the epoch it saw), STALE_OWNER: its lineage was
// superseded by one that continued above.
func TestFreshRegistryBelowCompactedFences(t *testing.T) {
	f := newFixture(t, func(c *proxy.Config) {
		c.Retention = proxy.RetentionConfig{MaxPerResource: 1, Interval: 10 * time.Millisecond}
	})
	ctx := context.Background()
	const res, path = "doc/7", "/v1/docs/7"
	regA := f.reg
	acquire := func(reg *registry.Registry, owner string) registry.Result {
		t.Helper()
		r, err := reg.Acquire(ctx, registry.AcquireRequest{Resource: res, Owner: owner, RequestID: "r-" + owner, TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// write sends segment seg of r's grant with a fresh proof from the
	// registry that issued it (proof-mode route: the sidecar does not ask
	// the registry).
	write := func(reg *registry.Registry, r registry.Result, owner string, seg int, body string) answer {
		t.Helper()
		st, err := reg.Status(ctx, registry.LeaseQuery{Lease: r.View.Lease.Lease})
		if err != nil {
			t.Fatal(err)
		}
		return f.do(call{path: path, owner: owner, grant: string(r.Grant), status: string(st.Status), seg: strconv.Itoa(seg), body: body})
	}
	bodies := func() []string {
		f.back.mu.Lock()
		defer f.back.mu.Unlock()
		return append([]string(nil), f.back.bodies...)
	}
	var lastA registry.Result
	for fence := 1; fence <= 4; fence++ {
		owner := "worker-a" + strconv.Itoa(fence)
		r := acquire(regA, owner)
		if r.View.Lease.Fence != uint64(fence) {
			t.Fatalf("registry A issued fence %d, want %d", r.View.Lease.Fence, fence)
		}
		write(regA, r, owner, 1, "A"+strconv.Itoa(fence)).expect(t, 201, "")
		if fence < 4 {
			if _, err := regA.Release(ctx, owner, r.View.Lease.Lease); err != nil {
				t.Fatal(err)
			}
		}
		lastA = r
	}
	f.run()
	deadline := time.Now().Add(10 * time.Second)
	for f.counter("fencegate_proxy_store_receipts") != 1 {
		if time.Now().After(deadline) {
			t.Fatal("retention did not delete the receipts of fences 1-3")
		}
		time.Sleep(10 * time.Millisecond)
	}
	sent := f.back.count()

	// The fresh registry: same key, empty data set, new lineage.
	regB, err := registry.New(registry.Options{Backend: memory.NewBackend(), Signer: regA.Signer(), MinTTL: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	registrytest.Start(t, regB)
	b1 := acquire(regB, "worker-b1")
	metaA, _ := regA.Meta(ctx)
	metaB, _ := regB.Meta(ctx)
	if b1.View.Lease.Fence != 1 || metaA.Lineage == "" || metaB.Lineage == "" || metaA.Lineage == metaB.Lineage {
		t.Fatalf("registry B: fence %d, lineages %q and %q", b1.View.Lease.Fence, metaA.Lineage, metaB.Lineage)
	}
	write(regB, b1, "worker-b1", 1, "B1").expect(t, 409, fencegate.CodeFenceRegression)
	if _, err := regB.Release(ctx, "worker-b1", b1.View.Lease.Lease); err != nil { // the worker stops
		t.Fatal(err)
	}
	rec, _ := f.record(res)
	if rec.Pause == nil || rec.Pause.Reason != store.PauseFenceRegression || rec.HighestFence != 4 || rec.Evidence.Lineage != metaA.Lineage {
		t.Fatalf("after registry B's fence 1: %+v, want paused (FENCE_REGRESSION) at fence 4 of lineage A", rec)
	}
	// Paused: the old registry's own grant is refused too, nothing reaches
	// the backend.
	write(regA, lastA, "worker-a4", 2, "A4-2").expect(t, 409, fencegate.CodeFenceRegression)
	if f.back.count() != sent {
		t.Fatal("a write reached the backend while the resource was paused")
	}

	// The procedure. The floor: the highest fence the sidecar lists.
	var page adminapi.FencesPage
	if st := f.adminJSON("GET", "/v1/fences?limit=1000", "", &page); st != 200 || page.MaxFence != 4 || page.Next != "" ||
		len(page.Fences) != 1 || page.Fences[0].Paused != store.PauseFenceRegression || page.Fences[0].Lineage != metaA.Lineage {
		t.Fatalf("GET /v1/fences: %d %+v", st, page)
	}
	if _, _, err := regB.RaiseFenceFloor(ctx, "", page.MaxFence); err != nil {
		t.Fatal(err)
	}
	if m, err := regB.BumpEpoch(ctx); err != nil || m.IssuerEpoch <= page.MinIssuerEpoch {
		t.Fatalf("epoch bump: %+v %v; the sidecar accepts epochs from %d", m, err, page.MinIssuerEpoch)
	}
	if st := f.adminJSON("POST", "/v1/resume", `{"resource":"`+res+`"}`, nil); st != 200 {
		t.Fatalf("resume: %d", st)
	}
	b5 := acquire(regB, "worker-b5")
	if b5.View.Lease.Fence != 5 {
		t.Fatalf("registry B's fence after the floor: %d, want 5", b5.View.Lease.Fence)
	}
	write(regB, b5, "worker-b5", 1, "B5").expect(t, 201, "")
	rec, _ = f.record(res)
	if rec.Pause != nil || rec.HighestFence != 5 || rec.Evidence.Lineage != metaB.Lineage || len(rec.PriorLineages) != 1 || rec.PriorLineages[0].Lineage != metaA.Lineage {
		t.Fatalf("after registry B's fence 5: %+v", rec)
	}
	// The old registry's grant: below the epoch this sidecar saw.
	write(regA, lastA, "worker-a4", 2, "A4-2").expect(t, 403, fencegate.CodeEpochRevoked)
	// A restarted sidecar forgot that epoch: the store refuses the grant of
	// the superseded lineage as stale, without a pause.
	if err := f.start(nil); err != nil {
		t.Fatal(err)
	}
	write(regA, lastA, "worker-a4", 2, "A4-2").expect(t, 409, fencegate.CodeStaleOwner)
	if rec, _ := f.record(res); rec.Pause != nil || rec.HighestFence != 5 {
		t.Fatalf("a stale grant of the old lineage changed the record: %+v", rec)
	}
	write(regB, b5, "worker-b5", 2, "B5-2").expect(t, 201, "")
	if got := bodies(); !slices.Equal(got, []string{"A1", "A2", "A3", "A4", "B5", "B5-2"}) {
		t.Fatalf("the backend received %q", got)
	}
}
