package redis_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/redis"
	"github.com/fencegate/fencegate/registry/registrytest"
)

const (
	anchorStore  = "billing-api"
	anchorCaller = "spiffe://fencegate.test/sidecar"
)

func seedItem(resource string, fence uint64) fencegate.AnchorItem {
	return fencegate.AnchorItem{Resource: resource, Op: fencegate.AnchorSeed, Next: fencegate.Progress{Fence: fence, Root: fmt.Sprintf("root-%d", fence)}}
}

// TestAnchorStepsDoNotConflictWithLeases: two registry processes on one
// Redis, each allowed a single attempt per step (MaxAttempts 1: a WATCH
// conflict is an error, not a retry). One grants and releases leases, the
// other anchors a store's resources, at the same time. Neither ever
// conflicts with the other: anchor steps WATCH only the store's record and
// the anchors they decide on (the lineage is read without WATCHing the
// meta) and write no meta, and lease steps touch none of their keys.
func TestAnchorStepsDoNotConflictWithLeases(t *testing.T) {
	srv := redistest.Start(t)
	k := registrytest.NewKeys(t)
	open := func() registry.Backend {
		be, err := redis.OpenBackend(context.Background(), redis.Options{Addr: srv.Addr(), MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = be.Close() })
		return be
	}
	beA, beB := open(), open()
	leases, anchors := newRegistry(t, beA, k, nil), newRegistry(t, beB, k, nil)
	ctx := context.Background()
	if _, err := leases.Init(ctx, registry.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := anchors.RegisterStore(ctx, anchorCaller, anchorStore, "gen-1"); err != nil {
		t.Fatal(err)
	}
	const n = 150
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	wg.Go(func() {
		for i := range n {
			res, err := leases.Acquire(ctx, registry.AcquireRequest{Resource: fmt.Sprintf("lease/r%d", i%7), Owner: "alice", RequestID: fmt.Sprintf("q-%d", i)})
			if err == nil {
				_, err = leases.Release(ctx, "alice", res.View.Lease.Lease)
			}
			if err != nil {
				errs <- fmt.Errorf("lease step %d: %w", i, err)
			}
		}
	})
	wg.Go(func() {
		for i := range n {
			_, err := anchors.Anchor(ctx, anchorCaller, anchorStore, fencegate.AnchorRequest{Generation: "gen-1",
				Items: []fencegate.AnchorItem{seedItem(fmt.Sprintf("anc/r%d", i), 1), seedItem("anc/hot", uint64(i+1))}})
			if err != nil {
				errs <- fmt.Errorf("anchor step %d: %w", i, err)
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for name, be := range map[string]registry.Backend{"leases": beA, "anchors": beB} {
		if n := be.(interface{ Restores() uint64 }).Restores(); n != 0 {
			t.Errorf("process %s recovered from %d rollbacks that never happened", name, n)
		}
	}
}

// TestAnchorsAcrossRedisRestores: a Redis restored from an older RDB keeps
// that data set's lineage and its (older) anchors, which the stores still
// cover; a Redis restarted empty is a new data set: the store is no longer
// registered, the next registration anchors it again (the sidecar seeds)
// under a new lineage, and the anchor step that found the state rolled
// back recovered it first (epoch bumped).
func TestAnchorsAcrossRedisRestores(t *testing.T) {
	srv := redistest.Start(t, rdbOnly...)
	be := openState(t, srv.Addr(), "")
	reg := newRegistry(t, be, registrytest.NewKeys(t), nil)
	ctx := context.Background()
	m, err := reg.Init(ctx, registry.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lineage := m.Lineage
	if _, err := reg.RegisterStore(ctx, anchorCaller, anchorStore, "gen-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Anchor(ctx, anchorCaller, anchorStore, fencegate.AnchorRequest{Generation: "gen-1", Items: []fencegate.AnchorItem{seedItem("r/1", 3)}}); err != nil {
		t.Fatal(err)
	}
	save(t, srv)
	snap := srv.Snapshot()
	if _, err := reg.Anchor(ctx, anchorCaller, anchorStore, fencegate.AnchorRequest{Generation: "gen-1", Items: []fencegate.AnchorItem{seedItem("r/1", 9)}}); err != nil {
		t.Fatal(err)
	}
	// A lease write after the snapshot, so the watermark sees the restore.
	grantAndRelease(t, reg, "restore/lease", "x", 1)
	save(t, srv)

	srv.RestoreSnapshot(snap)
	v, err := reg.Store(ctx, anchorCaller, anchorStore)
	if err != nil || v.Record.Generation != "gen-1" || v.Lineage != lineage {
		t.Fatalf("store after restoring an old RDB: %+v %v, want generation gen-1 and lineage %q kept", v, err, lineage)
	}
	resp, err := reg.Anchor(ctx, anchorCaller, anchorStore, fencegate.AnchorRequest{Generation: "gen-1", Items: []fencegate.AnchorItem{seedItem("r/1", 9)}})
	if err != nil || resp.Results[0].Outcome != fencegate.AnchorAnchored || resp.Lineage != lineage {
		t.Fatalf("a store ahead of its restored anchor: %+v %v", resp, err)
	}
	restores := be.(interface{ Restores() uint64 }).Restores()
	if restores == 0 {
		t.Errorf("the restore was not detected")
	}

	// Emptied (a restart on an empty disk, without its RDB).
	if err := raw(t, srv).FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	_, err = reg.Anchor(ctx, anchorCaller, anchorStore, fencegate.AnchorRequest{Generation: "gen-1", Items: []fencegate.AnchorItem{seedItem("r/1", 9)}})
	if err == nil || !strings.Contains(err.Error(), "not registered") {
		t.Fatalf("anchor on an emptied Redis: %v, want the store not registered", err)
	}
	if got := be.(interface{ Restores() uint64 }).Restores(); got <= restores {
		t.Errorf("the emptied Redis was not recovered before the anchor step decided (restores %d -> %d)", restores, got)
	}
	res, err := reg.RegisterStore(ctx, anchorCaller, anchorStore, "gen-1")
	if err != nil || !res.Created || fencegate.ValidateLineage(res.View.Lineage) != nil || res.View.Lineage == lineage {
		t.Fatalf("registration on an emptied Redis: %+v %v, want created under a new lineage (was %q)", res, err, lineage)
	}
}

// TestNoFalseRollbackBetweenProcesses: two registry processes grant and
// release leases on one Redis at the same time. Each hears the other's
// commits announced while its own reads are on their way; none of that is
// a rollback, so neither recovers (no epoch bump revoking every grant).
func TestNoFalseRollbackBetweenProcesses(t *testing.T) {
	srv := redistest.Start(t)
	k := registrytest.NewKeys(t)
	var bes []registry.Backend
	var wg sync.WaitGroup
	for p := range 2 {
		be, err := redis.OpenBackend(context.Background(), redis.Options{Addr: srv.Addr(), AllowNonDurable: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = be.Close() })
		bes = append(bes, be)
		reg := newRegistry(t, be, k, nil)
		wg.Go(func() { grantAndRelease(t, reg, fmt.Sprintf("both/p%d", p), fmt.Sprintf("p%d", p), 150) })
	}
	wg.Wait()
	for p, be := range bes {
		if n := be.(interface{ Restores() uint64 }).Restores(); n != 0 {
			t.Errorf("process %d recovered from %d rollbacks that never happened", p, n)
		}
	}
	if m, err := bes[0].Meta(context.Background()); err != nil || m.IssuerEpoch != 1 {
		t.Errorf("issuer epoch %d after concurrent grants (%v), want 1: a needless recovery revoked every grant", m.IssuerEpoch, err)
	}
}
