package redis_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/redis"
	"github.com/fencegate/fencegate/registry/registrytest"
)

// grantAndRelease acquires and releases resource n times on reg and
// returns the fences and the issuer epoch of the grants.
func grantAndRelease(t *testing.T, reg *registry.Registry, resource, tag string, n int) (fences []uint64, epoch uint64) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		var res registry.Result
		err := retryContention(func() (err error) {
			res, err = reg.Acquire(ctx, registry.AcquireRequest{Resource: resource, Owner: "alice", RequestID: fmt.Sprintf("%s-%d", tag, i)})
			return err
		})
		if err != nil {
			t.Fatalf("acquire: %v", err)
		}
		fences = append(fences, res.View.Lease.Fence)
		epoch = res.View.Lease.IssuerEpoch
		if err := retryContention(func() error { _, err := reg.Release(ctx, "alice", res.View.Lease.Lease); return err }); err != nil {
			t.Fatalf("release: %v", err)
		}
	}
	return fences, epoch
}

// retryContention calls op again while it fails with ErrContention, as a
// client does: a step that lost every optimistic race wrote nothing, so
// the same call (the same request ID) is safe to repeat. Two processes on
// a loaded two-core machine can starve one another past one call's
// attempts; that is contention, not the rollback these tests look for.
func retryContention(op func() error) error {
	for range 20 {
		if err := op(); !errors.Is(err, redis.ErrContention) {
			return err
		}
	}
	return op()
}

// openState opens a backend on addr that keeps its watermark in
// stateFile ("" for memory only). The servers of these tests keep RDB
// snapshots only (rdbOnly), which Open refuses unless AllowNonDurable: an
// operator who allowed one still gets its rollbacks detected.
func openState(t *testing.T, addr, stateFile string) registry.Backend {
	t.Helper()
	be, err := redis.OpenBackend(context.Background(), redis.Options{Addr: addr, StateFile: stateFile, AllowNonDurable: true,
		DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = be.Close() })
	return be
}

// rdbOnly runs redis-server with RDB persistence only: SAVE writes
// dump.rdb, and a restart loads it (the backup an operator restores).
var rdbOnly = []string{"--appendonly", "no", "--save", ""}

// save makes the server write its RDB now.
func save(t *testing.T, srv *redistest.Server) {
	t.Helper()
	if err := raw(t, srv).Save(context.Background()).Err(); err != nil {
		t.Fatalf("SAVE: %v", err)
	}
}

// TestRestoredSnapshotIsRecovered restores redis-server from a real old
// backup (an RDB, or the AOF with fsync always) taken before the last
// fences were issued. The registry must meet the restored state with an
// epoch bump and a fence floor before it issues anything: the first grant
// after the restore has a fence above every fence issued before it and an
// epoch above every epoch. This holds for a registry process that kept
// running across the restore (its watermark in memory) and for one
// stopped and restarted with the restore that kept its state file. One
// that crashed may have saved its revision up to a second late, so it may
// not see the rollback, but its state file's fence ceiling still lifts the
// floor at start above every fence it issued. A process restarted without
// a state file cannot tell (the documented limit: the sidecars'
// FENCE_REGRESSION check catches what it reissues).
func TestRestoredSnapshotIsRecovered(t *testing.T) {
	const resource = "restore/r"
	for _, persistence := range []struct {
		name string
		args []string
	}{{"old RDB", rdbOnly}, {"old AOF", durable}} {
		for _, c := range []struct {
			name      string
			restart   bool // a new registry process after the restore
			crash     bool // ... after the old one stopped without Close
			stateFile bool
			detected  string // the rollback is seen (epoch bumped): yes, no, or either
			covered   bool   // the next fence exceeds every fence issued
		}{
			{"process kept running", false, false, false, "yes", true},
			{"process restarted with its state file", true, false, true, "yes", true},
			// The state file may be up to a second stale after a crash:
			// the rollback may go unseen, the fence ceiling covers it.
			{"process crashed, restarted with its state file", true, true, true, "either", true},
			{"process restarted without a state file", true, false, false, "no", false},
		} {
			t.Run(persistence.name+"/"+c.name, func(t *testing.T) {
				srv := redistest.Start(t, persistence.args...)
				k := registrytest.NewKeys(t)
				state := ""
				if c.stateFile {
					state = filepath.Join(t.TempDir(), "redis-state.json")
				}
				be := openState(t, srv.Addr(), state)
				reg := newRegistry(t, be, k, nil)
				before, _ := grantAndRelease(t, reg, resource, "old", 3)
				save(t, srv)
				snap := srv.Snapshot()
				after, epoch := grantAndRelease(t, reg, resource, "new", 3)
				save(t, srv)
				highest := after[len(after)-1]

				srv.RestoreSnapshot(snap)
				if c.restart {
					if !c.crash {
						be.Close()
					}
					be = openState(t, srv.Addr(), state)
					reg = newRegistry(t, be, k, nil)
				}
				res, err := reg.Acquire(context.Background(), registry.AcquireRequest{Resource: resource, Owner: "bob", RequestID: "after-restore"})
				if err != nil {
					t.Fatalf("acquire after the restore: %v", err)
				}
				l := res.View.Lease
				restores := be.(interface{ Restores() uint64 }).Restores()
				covered, detected := l.Fence > highest, l.IssuerEpoch > epoch && restores > 0
				if covered != c.covered || (c.detected != "either" && detected != (c.detected == "yes")) {
					t.Fatalf("first grant after restoring a copy taken at fences %v (then %v were issued): fence %d epoch %d (before: epoch %d), %d restores detected; want fence above %d: %t, rollback detected: %s",
						before, after, l.Fence, l.IssuerEpoch, epoch, restores, highest, c.covered, c.detected)
				}
				if !c.covered {
					t.Logf("documented limit: fence %d issued again by a process that saw nothing before the restore", l.Fence)
				}
			})
		}
	}
}

// TestRestartedEmptyIsRecovered: a Redis without persistence restarts
// empty under a running registry. The next grant still exceeds every
// fence and epoch issued before, and the keyspace gets its schema back.
func TestRestartedEmptyIsRecovered(t *testing.T) {
	srv := redistest.Start(t, "--appendonly", "no", "--save", "")
	be := openState(t, srv.Addr(), "")
	reg := newRegistry(t, be, registrytest.NewKeys(t), nil)
	fences, epoch := grantAndRelease(t, reg, "empty/r", "old", 3)
	srv.Kill()
	srv.Restart()
	res, err := reg.Acquire(context.Background(), registry.AcquireRequest{Resource: "empty/r", Owner: "bob", RequestID: "after"})
	if err != nil {
		t.Fatalf("acquire after an empty restart: %v", err)
	}
	if l := res.View.Lease; l.Fence <= fences[len(fences)-1] || l.IssuerEpoch <= epoch {
		t.Fatalf("grant after an empty restart: fence %d epoch %d; fences before %v, epoch %d", l.Fence, l.IssuerEpoch, fences, epoch)
	}
	if got, err := raw(t, srv).Get(context.Background(), "{fgreg}:schema").Result(); err != nil || got != fmt.Sprint(redis.SchemaVersion) {
		t.Errorf("schema after recovery: %q %v", got, err)
	}
}

// TestRestoreSeenByEveryProcess: two registry processes share the Redis
// and both issue fences; the Redis is restored from an old RDB. Whichever
// process acquires first recovers with its own floor, and the other one,
// which issued higher fences, detects the rollback too when it next reads
// and raises the floor above its own: no fence issued before the restore
// is issued again, by either process.
func TestRestoreSeenByEveryProcess(t *testing.T) {
	srv := redistest.Start(t, rdbOnly...)
	k := registrytest.NewKeys(t)
	be1 := openState(t, srv.Addr(), filepath.Join(t.TempDir(), "state1.json"))
	be2 := openState(t, srv.Addr(), filepath.Join(t.TempDir(), "state2.json"))
	reg1, reg2 := newRegistry(t, be1, k, nil), newRegistry(t, be2, k, nil)
	grantAndRelease(t, reg1, "multi/a", "p1-old", 2)
	save(t, srv)
	snap := srv.Snapshot()
	issued := map[string][]uint64{}
	for _, r := range []string{"multi/a", "multi/b"} {
		f, _ := grantAndRelease(t, reg2, r, "p2-new-"+r[len("multi/"):], 5) // only process 2 issued these
		issued[r] = f
	}
	save(t, srv)
	// Process 1 hears process 2's writes announced on the state channel.
	type seer interface{ Seen() (uint64, uint64) }
	rev2, _ := be2.(seer).Seen()
	clk := clock.Real()
	for deadline := clk.Now().Add(10 * time.Second); ; {
		if rev1, fence1 := be1.(seer).Seen(); rev1 >= rev2 && fence1 >= issued["multi/a"][4] {
			break
		}
		if clk.Now().After(deadline) {
			t.Fatal("process 1 never heard process 2's writes")
		}
		clock.Sleep(clk, 10*time.Millisecond, nil)
	}
	srv.RestoreSnapshot(snap)
	for i, reg := range []*registry.Registry{reg1, reg2, reg1} {
		for _, r := range []string{"multi/a", "multi/b"} {
			f, _ := grantAndRelease(t, reg, r, fmt.Sprintf("after-%d-%s", i, r[len("multi/"):]), 1)
			hi := issued[r][len(issued[r])-1]
			if f[0] <= hi {
				t.Errorf("after the restore, process %d issued fence %d for %s; process 2 had issued up to %d", i%2+1, f[0], r, hi)
			}
		}
	}
}
