package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock/clocktest"
	"github.com/fencegate/fencegate/internal/etcdtest"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/etcd"
	"github.com/fencegate/fencegate/registry/registrytest"
)

// Restores with etcd's own tool: a snapshot taken (etcdtest.Snapshot) while
// the registry issues fences, more fences issued, then every member's data
// replaced by the snapshot restored with etcdutl snapshot restore
// (etcdtest.Restore), without --bump-revision (etcd's revision goes back
// with the data) and with --bump-revision --mark-compacted (etcd's
// revision goes forward, the data still back).

// restoreModes are the two restores etcd documents.
var restoreModes = []struct {
	name string
	o    etcdtest.RestoreOptions
}{{"without bump-revision", etcdtest.RestoreOptions{}}, {"bump-revision mark-compacted", etcdtest.RestoreOptions{BumpRevision: 1000}}}

// retryContention calls op again while it fails with ErrContention, as a
// client does (the step wrote nothing; the same request ID is safe to
// send again): two replicas on a loaded machine may starve each other.
func retryContention(op func() error) error {
	for range 20 {
		if err := op(); !errors.Is(err, etcd.ErrContention) {
			return err
		}
	}
	return op()
}

// acquire acquires resource for owner with request ID id.
func acquire(t *testing.T, reg *registry.Registry, resource, owner, id string) registry.LeaseRecord {
	t.Helper()
	var res registry.Result
	err := retryContention(func() (err error) {
		res, err = reg.Acquire(context.Background(), registry.AcquireRequest{Resource: resource, Owner: owner, RequestID: id})
		return err
	})
	if err != nil {
		t.Fatalf("acquire %s (%s): %v", resource, id, err)
	}
	return res.View.Lease
}

// grantAndRelease acquires and releases resource n times and returns the
// fences and the issuer epoch of the grants.
func grantAndRelease(t *testing.T, reg *registry.Registry, resource, tag string, n int) (fences []uint64, epoch uint64) {
	t.Helper()
	for i := range n {
		l := acquire(t, reg, resource, "alice", fmt.Sprintf("%s-%d", tag, i))
		fences, epoch = append(fences, l.Fence), l.IssuerEpoch
		err := retryContention(func() error { _, err := reg.Release(context.Background(), "alice", l.Lease); return err })
		if err != nil {
			t.Fatalf("release: %v", err)
		}
	}
	return fences, epoch
}

// openState opens a backend on c that keeps its watermark in stateFile
// ("" for memory only).
func openState(t *testing.T, c *etcdtest.Cluster, stateFile string) registry.Backend {
	t.Helper()
	be, err := etcd.OpenBackend(context.Background(), etcd.Options{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, StateFile: stateFile})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = be.Close() })
	return be
}

func restores(be registry.Backend) uint64 { return be.(interface{ Restores() uint64 }).Restores() }

// unique fails t when a fence appears twice in fences.
func unique(t *testing.T, fences []uint64) {
	t.Helper()
	seen := map[uint64]bool{}
	for _, f := range fences {
		if seen[f] {
			t.Fatalf("fence %d issued twice: %v", f, fences)
		}
		seen[f] = true
	}
}

// TestRestoredSnapshotIsRecovered: replica A runs across the restore (its
// watermark in memory only); replica B ran before it, was stopped, and a
// new process starts after it with B's state file. The snapshot is taken
// at fence 3 of a resource; fences 4..8 follow (A, B, A again: A saw them
// all) while a lease of another resource is held. After the restore, each
// replica's next grant is above fence 8 with an epoch above every epoch
// issued before, the replica that steps first counted one recovery (the
// restarted process does at Open, against its state file), no fence was
// issued twice, and the held lease (in the snapshot, so in the restored
// data) reads REVOKED. Either replica may step first.
func TestRestoredSnapshotIsRecovered(t *testing.T) {
	for _, mode := range restoreModes {
		for _, restartedFirst := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/restarted first %t", mode.name, restartedFirst), func(t *testing.T) {
				restoreStory(t, 1, mode.o, restartedFirst)
			})
		}
	}
}

// TestRestoredSnapshotIsRecoveredThreeMembers is the same story on a
// three-member etcd, every member restored from the one snapshot
// (without --bump-revision, the running replica first).
func TestRestoredSnapshotIsRecoveredThreeMembers(t *testing.T) {
	if testing.Short() {
		t.Skip("three etcd processes, restored")
	}
	restoreStory(t, 3, etcdtest.RestoreOptions{}, false)
}

func restoreStory(t *testing.T, members int, o etcdtest.RestoreOptions, restartedFirst bool) {
	const res = "restore/r"
	c := etcdtest.Start(t, members)
	k := registrytest.NewKeys(t)
	state := filepath.Join(t.TempDir(), "b.json")
	beA, beB := openState(t, c, ""), openState(t, c, state)
	regA, regB := newRegistry(t, beA, k, nil), newRegistry(t, beB, k, nil)

	var held registry.LeaseRecord
	err := retryContention(func() error {
		r, err := regA.Acquire(context.Background(), registry.AcquireRequest{Resource: "restore/held", Owner: "carol", RequestID: "held-1", TTL: 10 * time.Minute})
		held = r.View.Lease
		return err
	})
	if err != nil {
		t.Fatalf("acquire the held lease: %v", err)
	}
	issued, _ := grantAndRelease(t, regA, res, "old", 3)
	snap := c.Snapshot(t)
	for _, step := range []struct {
		reg *registry.Registry
		tag string
		n   int
	}{{regA, "new-a", 2}, {regB, "new-b", 2}, {regA, "new-a2", 1}} {
		f, _ := grantAndRelease(t, step.reg, res, step.tag, step.n)
		issued = append(issued, f...)
	}
	highest, epoch := issued[len(issued)-1], held.IssuerEpoch
	if err := beB.Close(); err != nil {
		t.Fatalf("close B: %v", err)
	}

	c.Restore(t, snap, o)
	type replica struct {
		name string
		open func() (*registry.Registry, registry.Backend)
	}
	running := replica{"replica-across-the-restore", func() (*registry.Registry, registry.Backend) { return regA, beA }}
	restarted := replica{"new-process-with-the-state-file", func() (*registry.Registry, registry.Backend) {
		be := openState(t, c, state)
		return newRegistry(t, be, k, nil), be
	}}
	order := []replica{running, restarted}
	if restartedFirst {
		order = []replica{restarted, running}
	}
	for i, r := range order {
		reg, be := r.open()
		l := acquire(t, reg, res, "bob", "after-"+r.name)
		issued = append(issued, l.Fence)
		if l.Fence <= highest || l.IssuerEpoch <= epoch || (i == 0 && restores(be) != 1) {
			t.Errorf("%s: first grant after the restore: fence %d epoch %d, %d restores; want a fence above %d, an epoch above %d (and 1 restore for the first to step)",
				r.name, l.Fence, l.IssuerEpoch, restores(be), highest, epoch)
		}
		if _, err := reg.Release(context.Background(), "bob", l.Lease); err != nil {
			t.Fatalf("release: %v", err)
		}
	}
	unique(t, issued)
	st, err := regA.Status(context.Background(), registry.LeaseQuery{Lease: held.Lease})
	if err != nil {
		t.Fatalf("status of the held lease: %v", err)
	}
	if st.View.State != fencegate.StateRevoked {
		t.Errorf("lease held before the snapshot reads %s after the recovery, want REVOKED", st.View.State)
	}
}

// TestRestoreUnseenByAFreshProcess is the documented limit (design §10,
// doc.go): after the restore, a registry process that starts with no
// state file, while no process that saw the lost writes runs, has nothing
// to compare the restored state with. It issues fence 4 again: what the
// sidecars' check (FENCE_REGRESSION, STALE_OWNER) is the last line for.
// The test asserts that limit, so that a change making it see more is
// noticed (and this test updated), not that it is wanted.
func TestRestoreUnseenByAFreshProcess(t *testing.T) {
	for _, mode := range restoreModes {
		t.Run(mode.name, func(t *testing.T) {
			const res = "unseen/r"
			c := etcdtest.Start(t, 1)
			k := registrytest.NewKeys(t)
			be := openState(t, c, filepath.Join(t.TempDir(), "a.json"))
			reg := newRegistry(t, be, k, nil)
			issued, _ := grantAndRelease(t, reg, res, "old", 3)
			snap := c.Snapshot(t)
			lost, _ := grantAndRelease(t, reg, res, "new", 3)
			if err := be.Close(); err != nil {
				t.Fatal(err)
			}
			c.Restore(t, snap, mode.o)
			fresh := openState(t, c, "")
			l := acquire(t, newRegistry(t, fresh, k, nil), res, "bob", "after")
			if l.Fence != lost[0] || restores(fresh) != 0 {
				t.Fatalf("fresh process after the restore: fence %d, %d restores; the known limit is fence %d again, unseen (fences before: %v then %v)",
					l.Fence, restores(fresh), lost[0], issued, lost)
			}
			t.Logf("documented limit: fence %d issued again by a process that saw nothing before the restore", l.Fence)
		})
	}
}

// TestWakeUpAcrossRestore: replica W has a waiting acquire whose timers
// never fire (a fake clock nobody advances); only the wake-up watch can
// wake it. W's watch had followed A's releases past the snapshot's
// revision. After the restore, without --bump-revision the watch the
// client resumed waits at a revision the restored cluster has not
// reached: W's next step reads at a lower etcd revision and watches again
// from the current one; with --bump-revision --mark-compacted the resumed
// watch is cancelled as compacted and W watches again. Either way, A's
// release after the restore wakes W's waiter, which is granted.
func TestWakeUpAcrossRestore(t *testing.T) {
	for _, mode := range restoreModes {
		t.Run(mode.name, func(t *testing.T) {
			c := etcdtest.Start(t, 1)
			k := registrytest.NewKeys(t)
			beA, beW := openState(t, c, ""), openState(t, c, "")
			// Both clocks are fakes at one start, as in
			// TestReleaseWakesWaiterOnOtherReplica: W sees A's lease expire
			// after the wait's deadline, at a timer that never fires.
			regA := newRegistry(t, beA, k, clocktest.New(time.Time{}))
			clkW := clocktest.New(time.Time{})
			regW := newRegistry(t, beW, k, clkW)
			grantAndRelease(t, regA, "wake/x", "old", 2)
			snap := c.Snapshot(t)
			grantAndRelease(t, regA, "wake/x", "new", 5)
			starts := etcd.WatchStarts(beW)

			c.Restore(t, snap, mode.o)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var held registry.LeaseRecord
			err := retryContention(func() error {
				res, err := regA.Acquire(ctx, registry.AcquireRequest{Resource: "wake/r", Owner: "alice", RequestID: "a-1", TTL: 10 * time.Second})
				held = res.View.Lease
				return err
			})
			if err != nil {
				t.Fatalf("acquire on A after the restore: %v", err)
			}
			done := make(chan error, 1)
			go func() {
				res, err := regW.Acquire(ctx, registry.AcquireRequest{Resource: "wake/r", Owner: "bob", RequestID: "b-1", TTL: 10 * time.Second, Wait: 20 * time.Second})
				if err == nil && (res.View.Lease.Owner != "bob" || res.View.Lease.Fence <= held.Fence) {
					err = fmt.Errorf("granted %+v, want bob's lease above fence %d", res.View.Lease, held.Fence)
				}
				done <- err
			}()
			if !clkW.WaitArmed(ctx, 2) {
				t.Fatalf("W's acquire did not start waiting: %v", <-done)
			}
			for etcd.WatchStarts(beW) == starts {
				if ctx.Err() != nil {
					t.Fatal("W never watched the wake-up keys again after the restore")
				}
				time.Sleep(time.Millisecond)
			}
			if _, err := regA.Release(ctx, "alice", held.Lease); err != nil {
				t.Fatalf("release on A: %v", err)
			}
			if err := <-done; err != nil {
				t.Fatalf("W's waiting acquire: %v (not woken by A's release after the restore)", err)
			}
		})
	}
}
