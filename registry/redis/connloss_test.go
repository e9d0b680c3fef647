package redis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/registrytest"
)

// TestConnectionLossMidAcquire kills redis-server between the acquire's
// WATCHed reads and its EXEC (inside the seal, which runs between the
// decision and the write): the acquire must fail with ErrBackend and
// return no grant, and after a restart nothing of it was written: no
// holder, LastFence unchanged. With the server down, every operation
// fails with ErrBackend; none answers from a cache.
func TestConnectionLossMidAcquire(t *testing.T) {
	srv := redistest.Start(t, durable...)
	ctx := context.Background()
	k := registrytest.NewKeys(t)
	be := open(t, srv.Addr())
	defer be.Close()
	reg := newRegistry(t, be, k, nil)

	// One earlier grant, released: LastFence is 1.
	first, err := reg.Acquire(ctx, registry.AcquireRequest{Resource: "loss/r", Owner: "o", RequestID: "first", TTL: time.Minute})
	if err != nil {
		t.Fatalf("first acquire: %v", err)
	}
	if _, err := reg.Release(ctx, "o", first.View.Lease.Lease); err != nil {
		t.Fatalf("release: %v", err)
	}

	sealed := 0
	kill := func(*fencegate.Grant) ([]byte, error) {
		sealed++
		srv.Kill()
		return []byte("header.payload.signature"), nil
	}
	now := time.Now()
	res, err := be.Acquire(ctx, registry.AcquireInput{
		Resource: "loss/r", Owner: "o", RequestID: "second", OpClass: "write", TTL: time.Minute,
		Issuer: "https://registry.test", LeaseID: "lease-second", GrantID: "grant-second", Now: now,
	}, kill)
	if sealed != 1 {
		t.Fatalf("the seal ran %d times, want 1 (the kill is meant to land between decision and write)", sealed)
	}
	if !errors.Is(err, registry.ErrBackend) {
		t.Fatalf("acquire with the server killed before EXEC: %v (granted %v), want ErrBackend", err, res.Granted)
	}
	if res.Granted || res.View.Lease.Fence != 0 {
		t.Errorf("a failed acquire returned a lease: %+v", res.View.Lease)
	}

	// Down: everything fails closed.
	if _, err := reg.Acquire(ctx, registry.AcquireRequest{Resource: "loss/r", Owner: "o", RequestID: "third", TTL: time.Minute}); !errors.Is(err, registry.ErrBackend) {
		t.Errorf("acquire with the server down: %v, want ErrBackend", err)
	}
	if _, err := reg.Status(ctx, registry.LeaseQuery{Lease: first.View.Lease.Lease}); !errors.Is(err, registry.ErrBackend) {
		t.Errorf("status with the server down: %v, want ErrBackend", err)
	}
	if _, err := be.Resource(ctx, "loss/r", now); !errors.Is(err, registry.ErrBackend) {
		t.Errorf("resource read with the server down: %v, want ErrBackend", err)
	}

	// Back up (same client, same data): the killed acquire wrote nothing.
	srv.Restart()
	v, err := be.Resource(ctx, "loss/r", now)
	if err != nil {
		t.Fatalf("read after restart: %v", err)
	}
	if v.Record.LastFence != first.View.Lease.Fence || v.Record.Holder != first.View.Lease.Lease {
		t.Errorf("after the failed acquire: LastFence %d holder %q, want %d %q", v.Record.LastFence, v.Record.Holder, first.View.Lease.Fence, first.View.Lease.Lease)
	}
	if _, err := be.Lease(ctx, registry.LeaseQuery{Owner: "o", RequestID: "second", Now: now}); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("request of the failed acquire: %v, want ErrNotFound", err)
	}
	again, err := reg.Acquire(ctx, registry.AcquireRequest{Resource: "loss/r", Owner: "o", RequestID: "second", TTL: time.Minute})
	if err != nil {
		t.Fatalf("acquire after restart: %v", err)
	}
	if again.View.Lease.Fence != first.View.Lease.Fence+1 {
		t.Errorf("fence after restart %d, want %d", again.View.Lease.Fence, first.View.Lease.Fence+1)
	}
}
