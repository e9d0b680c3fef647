package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/internal/etcdtest"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/etcd"
	"github.com/fencegate/fencegate/registry/registrytest"
)

// openWith opens a backend with o (the default prefix), closed when the
// test ends.
func openWith(t testing.TB, o etcd.Options) registry.Backend {
	t.Helper()
	if o.DialTimeout == 0 {
		o.DialTimeout = 2 * time.Second
	}
	be, err := etcd.OpenBackend(context.Background(), o)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { be.Close() })
	return be
}

// grantLog is the fences of a resource's grants in the order they were
// returned, with the lease each was returned for.
type grantLog struct {
	mu     sync.Mutex
	fences []uint64
	leases []string
}

func (g *grantLog) add(res registry.Result) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.fences = append(g.fences, res.View.Lease.Fence)
	g.leases = append(g.leases, res.View.Lease.Lease)
	return len(g.fences)
}

// check fails t unless every fence went to one lease only and each grant's
// fence is above the one returned before it (a resource is held by one
// lease at a time, and a grant is returned before its release).
func (g *grantLog) check(t *testing.T) {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	owner := map[uint64]string{}
	for i, f := range g.fences {
		if l, ok := owner[f]; ok && l != g.leases[i] {
			t.Fatalf("fence %d issued to leases %s and %s (fences in order: %v)", f, l, g.leases[i], g.fences)
		}
		owner[f] = g.leases[i]
		if i > 0 && f <= g.fences[i-1] {
			t.Fatalf("grant %d has fence %d, not above the one before it (%d): %v", i, f, g.fences[i-1], g.fences)
		}
	}
}

// TestLeaderKilledUnderItsOwnReplica: replica "own" reaches etcd only
// through the leader's member; replica "all" through every member, the
// leader first. Both hand one resource back and forth; the leader is
// SIGKILLed as own sends a release. Every call of own then fails (its
// one member is dead): with ErrBackend once its RetryFor is spent, never a
// decision; its worker sends the same request again, and once the member
// is started again (as a follower of the new leader) gets the grant it may
// already have had or a new one. Replica all rides the election out inside
// the Store (the step runs again on fresh reads), its worker never sees an
// error. Invariant: no fence to two leases, each grant's fence above the
// last.
func TestLeaderKilledUnderItsOwnReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("three etcd processes")
	}
	c := etcdtest.Start(t, 3)
	k := registrytest.NewKeys(t)
	lead := leader(t, c)
	leadFirst := []string{c.Member(lead).Endpoint()}
	for i, m := range c.Members() {
		if i != lead {
			leadFirst = append(leadFirst, m.Endpoint())
		}
	}
	own := newRegistry(t, openWith(t, etcd.Options{Endpoints: leadFirst[:1], RetryFor: time.Second, AttemptTimeout: time.Second}), k, clock.Real())
	all := newRegistry(t, openWith(t, etcd.Options{Endpoints: leadFirst, RetryFor: 20 * time.Second}), k, clock.Real())
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	var log grantLog
	var ownErrs, allErrs atomic.Int64
	ownFailed := make(chan struct{}) // closed at own's first error after the kill
	var failOnce sync.Once
	killed := make(chan struct{})
	ownDone := make(chan struct{})
	const rounds = 12
	// cycle acquires the resource (sending the same request again after an
	// ErrBackend, as the API tells clients to) and releases it.
	// beforeRelease runs between the grant and its release.
	cycle := func(reg *registry.Registry, owner string, i int, errs *atomic.Int64, onErr func(), beforeRelease func()) error {
		req := registry.AcquireRequest{Resource: "own/r", Owner: owner, RequestID: fmt.Sprintf("%s-%d", owner, i), TTL: 60 * time.Second, Wait: 60 * time.Second}
		res, err := reg.Acquire(ctx, req)
		for ; err != nil && errors.Is(err, registry.ErrBackend); res, err = reg.Acquire(ctx, req) {
			errs.Add(1)
			onErr()
		}
		if err != nil {
			return fmt.Errorf("%s acquire %d: %w", owner, i, err)
		}
		log.add(res)
		beforeRelease()
		_, err = reg.Release(ctx, owner, res.View.Lease.Lease)
		for ; err != nil && errors.Is(err, registry.ErrBackend); _, err = reg.Release(ctx, owner, res.View.Lease.Lease) {
			errs.Add(1)
			onErr()
		}
		if err != nil {
			return fmt.Errorf("%s release %d: %w", owner, i, err)
		}
		return nil
	}
	errs := make(chan error, 2)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer close(ownDone)
		onErr := func() {
			select {
			case <-killed:
				failOnce.Do(func() { close(ownFailed) })
			default:
			}
		}
		for i := range rounds {
			kill := func() {}
			if i == rounds/3 {
				// The leader dies as own's release is sent (in flight, or
				// just done); own's next call is sent after its death.
				kill = func() { go func() { c.Member(lead).Kill(); close(killed) }() }
			}
			if i == rounds/3+1 {
				<-killed
			}
			if err := cycle(own, "own", i, &ownErrs, onErr, kill); err != nil {
				errs <- err
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		// all goes on until own is done, so that own, waiting, is woken.
		for i := 0; ; i++ {
			select {
			case <-ownDone:
				if i >= rounds {
					return
				}
			default:
			}
			if err := cycle(all, "all", i, &allErrs, func() {}, func() {}); err != nil {
				errs <- err
				return
			}
		}
	}()
	// own's member comes back once own failed (or, if own was waiting
	// when it died, once own's work is stuck on it: all keeps granting).
	select {
	case <-ownFailed:
	case <-ownDone:
	case <-ctx.Done():
	}
	c.Member(lead).Start()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	select {
	case <-killed:
	default:
		t.Fatal("the leader was never killed")
	}
	log.check(t)
	if n := allErrs.Load(); n != 0 {
		t.Errorf("the replica on every member returned %d errors across the leader's kill; want 0 (the Store retries an unavailable step)", n)
	}
	if ownErrs.Load() == 0 {
		t.Errorf("the replica on the dead member never failed")
	}
	t.Logf("%d grants, fences %d..%d; own sent %d calls again, all %d", len(log.fences), log.fences[0], log.fences[len(log.fences)-1], ownErrs.Load(), allErrs.Load())
}
