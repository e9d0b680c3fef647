package redis_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/redis"
	"github.com/fencegate/fencegate/registry/registrytest"
)

// TestConflictExhaustionFailsClosed makes every attempt of a step
// conflict (another store writes the meta between the step's read and its
// EXEC): the step must run exactly MaxAttempts times, then fail with
// ErrBackend and ErrContention, and none of its writes may land.
func TestConflictExhaustionFailsClosed(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	const attempts = 3
	a, err := redis.Open(ctx, redis.Options{Addr: srv.Addr(), MaxAttempts: attempts})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer a.Close()
	b, err := redis.Open(ctx, redis.Options{Addr: srv.Addr()})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer b.Close()

	bump := func() {
		err := b.Update(ctx, func(tx registry.Tx) error {
			m, err := tx.Meta()
			if err != nil {
				return err
			}
			m.Revision++
			return tx.PutMeta(m)
		})
		if err != nil {
			t.Fatalf("interfering write: %v", err)
		}
	}
	runs := 0
	err = a.Update(ctx, func(tx registry.Tx) error {
		runs++
		m, err := tx.Meta()
		if err != nil {
			return err
		}
		bump() // another process writes what this step read
		m.FenceFloor = 999
		if err := tx.PutResource(registry.ResourceRecord{Resource: "conflict/r", LastFence: 999}); err != nil {
			return err
		}
		return tx.PutMeta(m)
	})
	if !errors.Is(err, registry.ErrBackend) || !errors.Is(err, redis.ErrContention) {
		t.Fatalf("a step that always conflicts: %v, want ErrBackend and ErrContention", err)
	}
	if runs != attempts {
		t.Errorf("the step ran %d times, want %d", runs, attempts)
	}
	be := registry.NewTxBackend(b)
	m, err := be.Meta(ctx)
	if err != nil {
		t.Fatalf("meta: %v", err)
	}
	if m.FenceFloor != 0 || m.Revision != attempts {
		t.Errorf("meta after the failed step: %+v, want only the %d interfering writes", m, attempts)
	}
	v, err := be.Resource(ctx, "conflict/r", time.Now())
	if err != nil {
		t.Fatalf("resource: %v", err)
	}
	if v.Record.LastFence != 0 {
		t.Errorf("the failed step wrote LastFence %d", v.Record.LastFence)
	}
}

// TestTwoProcessesRace runs two registries (two stores: no shared mutex,
// so they meet only through WATCH conflicts) on one keyspace, with
// workers acquiring and releasing one resource. At most one lease is held
// at a time and every fence is issued once, increasing in grant order. A
// step that ran out of attempts fails with ErrContention and grants
// nothing; the worker tries again.
func TestTwoProcessesRace(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	k := registrytest.NewKeys(t)
	var regs []*registry.Registry
	for range 2 {
		be := open(t, srv.Addr())
		defer be.Close()
		regs = append(regs, newRegistry(t, be, k, nil))
	}
	const workers, rounds = 4, 15
	var (
		slot       atomic.Int64
		mu         sync.Mutex
		fences     []uint64
		contention atomic.Int64
		wg         sync.WaitGroup
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reg := regs[w%2]
			owner := fmt.Sprintf("w%d", w)
			for r := range rounds {
				rq := registry.AcquireRequest{Resource: "race/two", Owner: owner, RequestID: fmt.Sprintf("w%d-r%d", w, r), TTL: time.Minute}
				var res registry.Result
				for {
					var err error
					res, err = reg.Acquire(ctx, rq)
					if err == nil {
						break
					}
					if errors.Is(err, redis.ErrContention) {
						contention.Add(1)
						continue
					}
					if !errors.Is(err, registry.ErrLeaseHeld) {
						t.Errorf("%s: acquire: %v", owner, err)
						return
					}
					time.Sleep(100 * time.Microsecond)
				}
				if prev := slot.Swap(int64(w + 1)); prev != 0 {
					t.Errorf("%s got fence %d while w%d holds the lease", owner, res.View.Lease.Fence, prev-1)
				}
				mu.Lock()
				fences = append(fences, res.View.Lease.Fence)
				mu.Unlock()
				slot.Store(0)
				for {
					_, err := reg.Release(ctx, owner, res.View.Lease.Lease)
					if err == nil {
						break
					}
					if !errors.Is(err, redis.ErrContention) {
						t.Errorf("%s: release: %v", owner, err)
						return
					}
					contention.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if len(fences) != workers*rounds {
		t.Fatalf("%d grants, want %d", len(fences), workers*rounds)
	}
	for i, f := range fences {
		if f != uint64(i+1) {
			t.Fatalf("fences in grant order %v: position %d is %d, want %d", fences, i, f, i+1)
		}
	}
	t.Logf("%d steps ran out of attempts and were retried by the caller", contention.Load())
}

// TestRefusedStepLeavesNoWatch: a step whose function fails (a decision
// that writes nothing: a busy acquire) sends no EXEC, so it must UNWATCH
// what it read. Otherwise its connection goes back to the pool still
// watching, and the next step on it conflicts with a change of a key only
// the refused step read: every waiting acquire's first busy attempt made
// the attempt its wake-up started conflict and back off (up to a
// millisecond) once the holder's release changed the keys it had read.
// The store has one attempt per step, so a stale WATCH fails it.
func TestRefusedStepLeavesNoWatch(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	a, err := redis.Open(ctx, redis.Options{Addr: srv.Addr(), MaxAttempts: 1})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer a.Close()
	b, err := redis.Open(ctx, redis.Options{Addr: srv.Addr()})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer b.Close()
	refused := errors.New("refused")
	for i := range 20 {
		err := a.Update(ctx, func(tx registry.Tx) error {
			if _, err := tx.Meta(); err != nil {
				return err
			}
			return refused
		})
		if !errors.Is(err, refused) {
			t.Fatalf("refused step: %v", err)
		}
		err = b.Update(ctx, func(tx registry.Tx) error {
			m, err := tx.Meta()
			if err != nil {
				return err
			}
			m.Revision++
			return tx.PutMeta(m)
		})
		if err != nil {
			t.Fatalf("write of the meta: %v", err)
		}
		err = a.Update(ctx, func(tx registry.Tx) error {
			return tx.PutResource(registry.ResourceRecord{Resource: fmt.Sprint("watch/", i), LastFence: 1})
		})
		if err != nil {
			t.Fatalf("round %d: a step that read nothing the other wrote: %v (a stale WATCH of the refused step)", i, err)
		}
	}
}
