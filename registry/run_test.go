package registry_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate/clock/clocktest"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/memory"
	"github.com/fencegate/fencegate/registry/registrytest"
)

// TestWaiterWokenWithoutRun: a Registry whose Run is not running still
// hands a released lease to its waiting acquire at once. The clock stands
// still, so no timer can wake the waiter: only the release does.
func TestWaiterWokenWithoutRun(t *testing.T) {
	be := memory.NewBackend()
	t.Cleanup(func() { be.Close() })
	clk := clocktest.New(time.Time{})
	reg, err := registry.New(registry.Options{Backend: be, Signer: registrytest.NewKeys(t).Signer, Clock: clk, Metrics: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	held, err := reg.Acquire(ctx, registry.AcquireRequest{Resource: "run/r", Owner: "alice", RequestID: "a", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		res registry.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := reg.Acquire(ctx, registry.AcquireRequest{Resource: "run/r", Owner: "bob", RequestID: "b", TTL: time.Minute, Wait: 30 * time.Second})
		done <- outcome{res, err}
	}()
	// The wait's deadline and the holder's expiry: bob is waiting.
	if !clk.WaitArmed(ctx, 2) {
		t.Fatal("bob's acquire did not start waiting")
	}
	if _, err := reg.Release(ctx, "alice", held.View.Lease.Lease); err != nil {
		t.Fatal(err)
	}
	o := <-done
	if o.err != nil || o.res.View.Lease.Owner != "bob" {
		t.Fatalf("bob's waiting acquire: %+v, %v; want bob's lease", o.res.View.Lease, o.err)
	}
}

// TestRunReturnsWhenCtxEnds: Run works until its context ends and then
// returns nil.
func TestRunReturnsWhenCtxEnds(t *testing.T) {
	be := memory.NewBackend()
	t.Cleanup(func() { be.Close() })
	reg, err := registry.New(registry.Options{Backend: be, Signer: registrytest.NewKeys(t).Signer, Metrics: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- reg.Run(ctx) }()
	select {
	case err := <-errc:
		t.Fatalf("Run returned before its context ended: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}
