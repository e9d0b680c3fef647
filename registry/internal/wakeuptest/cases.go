package wakeuptest

import (
	"context"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock/clocktest"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/registrytest"
)

// ReleaseWakesWaiter: A (over beA) holds a resource for 10 s; B (over
// beB, the same store) has a waiting acquire, which found the resource
// busy and armed its timer for the holder's expiry. A releases: B's
// waiter is granted the lease. B's clock is a fake nobody advances, so its
// timers (the holder's expiry, the wait's deadline: its poll) never fire:
// only the backend's wake-up of A's release can wake it, and without it
// the acquire would wait until the test's context ends, limit.
func ReleaseWakesWaiter(t *testing.T, beA, beB registry.Backend, subscribed Subscribed, limit time.Duration) {
	k := registrytest.NewKeys(t)
	clkA, clkB := clocktest.New(time.Time{}), clocktest.New(time.Time{})
	regA := NewRegistry(t, beA, k, clkA, subscribed)
	regB := NewRegistry(t, beB, k, clkB, subscribed)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()

	held, err := regA.Acquire(ctx, registry.AcquireRequest{Resource: "wake/r", Owner: "alice", RequestID: "a-1", TTL: 10 * time.Second})
	if err != nil {
		t.Fatalf("acquire on A: %v", err)
	}
	type outcome struct {
		res registry.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := regB.Acquire(ctx, registry.AcquireRequest{Resource: "wake/r", Owner: "bob", RequestID: "b-1", TTL: 10 * time.Second, Wait: 20 * time.Second})
		done <- outcome{res, err}
	}()
	// Two timers armed on B: the wait's deadline, then (after a busy
	// attempt) the holder's expiry. B is now waiting on its timers.
	if !clkB.WaitArmed(ctx, 2) {
		t.Fatalf("B's acquire did not start waiting")
	}
	if _, err := regA.Release(ctx, "alice", held.View.Lease.Lease); err != nil {
		t.Fatalf("release on A: %v", err)
	}
	o := <-done
	if o.err != nil {
		t.Fatalf("B's waiting acquire: %v (not woken by A's release)", o.err)
	}
	if o.res.View.Lease.Owner != "bob" || o.res.View.Lease.Fence <= held.View.Lease.Fence {
		t.Errorf("B got %+v, want bob's lease with a fence above %d", o.res.View.Lease, held.View.Lease.Fence)
	}
	if clkB.Now() != clocktest.Start {
		t.Errorf("B's clock moved: %v", clkB.Now())
	}
}

// CommitWakesWaiter: the end of a lease is announced by the commit that
// ends it. A's lease is released through beA directly, with no Registry on
// A to notify anyone after the commit, and B's waiter (over beB, whose
// timers never fire) is still woken and granted within limit.
func CommitWakesWaiter(t *testing.T, beA, beB registry.Backend, subscribed Subscribed, limit time.Duration) {
	k := registrytest.NewKeys(t)
	clkB := clocktest.New(time.Time{})
	regB := NewRegistry(t, beB, k, clkB, subscribed)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()

	now := clocktest.Start
	held, err := beA.Acquire(ctx, registry.AcquireInput{Resource: "wake/c", Owner: "alice", RequestID: "a-1", OpClass: "write", TTL: 10 * time.Second,
		Issuer: "i", LeaseID: "lease-a1", GrantID: "g-a1", Lineage: "0123456789abcdef0123456789abcdef", Now: now},
		func(*fencegate.Grant) ([]byte, error) { return []byte("token-a1"), nil })
	if err != nil || !held.Granted {
		t.Fatalf("acquire on A's backend: %+v, %v", held, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := regB.Acquire(ctx, registry.AcquireRequest{Resource: "wake/c", Owner: "bob", RequestID: "b-1", TTL: 10 * time.Second, Wait: 20 * time.Second})
		done <- err
	}()
	if !clkB.WaitArmed(ctx, 2) {
		t.Fatalf("B's acquire did not start waiting")
	}
	if res, err := beA.Release(ctx, registry.ReleaseInput{Lease: "lease-a1", Owner: "alice", Now: now}); err != nil || !res.Released {
		t.Fatalf("release on A's backend: %+v, %v", res, err)
	}
	if err := <-done; err != nil {
		t.Fatalf("B's waiting acquire: %v (not woken by the commit of A's release)", err)
	}
}
