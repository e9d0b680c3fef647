package redis_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/redis"
	"github.com/fencegate/fencegate/registry/registrytest"
)

// openFast opens a backend on srv with short read and write timeouts.
func openFast(t *testing.T, srv *redistest.Server) registry.Backend {
	t.Helper()
	be, err := redis.OpenBackend(context.Background(), redis.Options{Addr: srv.Addr(),
		DialTimeout: time.Second, ReadTimeout: 150 * time.Millisecond, WriteTimeout: 150 * time.Millisecond})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { be.Close() })
	return be
}

// TestFrozenServerFailsClosed freezes the server (DEBUG SLEEP) inside an
// acquire's seal, between its WATCHed reads and its EXEC: the client times
// out and the acquire fails with ErrBackend and no grant. The frozen
// server runs the EXEC when it wakes (it was already in its socket), so
// the acquire did land although it failed: the caller's retry with the
// same request ID gets that very lease and fence back, another owner is
// refused, and no fence is issued twice.
func TestFrozenServerFailsClosed(t *testing.T) {
	srv := redistest.Start(t, redistest.DebugArgs...)
	ctx := context.Background()
	k := registrytest.NewKeys(t)
	be := openFast(t, srv)
	reg := newRegistry(t, be, k, nil)
	first, err := reg.Acquire(ctx, registry.AcquireRequest{Resource: "slow/r", Owner: "o", RequestID: "first", TTL: time.Minute})
	if err != nil {
		t.Fatalf("first acquire: %v", err)
	}
	if _, err := reg.Release(ctx, "o", first.View.Lease.Lease); err != nil {
		t.Fatalf("release: %v", err)
	}

	var wait func() error
	freeze := func(*fencegate.Grant) ([]byte, error) {
		if wait != nil {
			t.Error("the seal ran twice")
			return []byte("header.payload.signature"), nil
		}
		var err error
		if wait, err = srv.Freeze(700 * time.Millisecond); err != nil {
			t.Error(err)
		}
		time.Sleep(20 * time.Millisecond) // let the server take the DEBUG SLEEP first
		return []byte("header.payload.signature"), nil
	}
	now := time.Now()
	res, err := be.Acquire(ctx, registry.AcquireInput{
		Resource: "slow/r", Owner: "o", RequestID: "second", OpClass: "write", TTL: time.Minute,
		Issuer: "https://registry.test", LeaseID: "lease-second", GrantID: "grant-second", Now: now,
	}, freeze)
	if !errors.Is(err, registry.ErrBackend) {
		t.Fatalf("acquire with the server frozen: %v (granted %v), want ErrBackend", err, res.Granted)
	}
	if res.Granted || res.View.Lease.Fence != 0 {
		t.Errorf("a failed acquire returned a lease: %+v", res.View.Lease)
	}
	if wait == nil {
		t.Fatal("the seal did not run")
	}
	if err := wait(); err != nil {
		t.Fatal(err)
	}

	want := first.View.Lease.Fence + 1
	v, err := be.Resource(ctx, "slow/r", now)
	if err != nil {
		t.Fatalf("read after the freeze: %v", err)
	}
	if v.Record.LastFence != want || v.Record.Holder != "lease-second" {
		t.Fatalf("after the freeze: LastFence %d holder %q; want %d lease-second (the EXEC ran late)", v.Record.LastFence, v.Record.Holder, want)
	}
	again, err := reg.Acquire(ctx, registry.AcquireRequest{Resource: "slow/r", Owner: "o", RequestID: "second", TTL: time.Minute})
	if err != nil {
		t.Fatalf("retry of the failed acquire: %v", err)
	}
	if again.View.Lease.Lease != "lease-second" || again.View.Lease.Fence != want {
		t.Errorf("retry of the failed acquire: lease %q fence %d, want lease-second fence %d", again.View.Lease.Lease, again.View.Lease.Fence, want)
	}
	if _, err := reg.Acquire(ctx, registry.AcquireRequest{Resource: "slow/r", Owner: "p", RequestID: "rival", TTL: time.Minute}); !errors.Is(err, registry.ErrLeaseHeld) {
		t.Errorf("another owner while the late lease is held: %v, want ErrLeaseHeld", err)
	}
}

// TestOutOfMemoryFailsClosed fills a noeviction server: acquire and
// release fail with ErrBackend and change nothing (the refused MULTI
// aborts wholly); so do status proofs (a view's EXEC is refused too),
// while a lookup that finds nothing still answers. Once the filler is deleted the
// next acquire gets the next fence: none was consumed or half-written.
func TestOutOfMemoryFailsClosed(t *testing.T) {
	srv := redistest.Start(t, "--maxmemory", "2mb", "--maxmemory-policy", "noeviction")
	ctx := context.Background()
	k := registrytest.NewKeys(t)
	be := openFast(t, srv)
	reg := newRegistry(t, be, k, nil)
	first, err := reg.Acquire(ctx, registry.AcquireRequest{Resource: "oom/r", Owner: "o", RequestID: "first", TTL: time.Minute})
	if err != nil {
		t.Fatalf("first acquire: %v", err)
	}
	a := raw(t, srv)
	filled := redistest.Fill(t, a)

	if _, err := reg.Release(ctx, "o", first.View.Lease.Lease); !errors.Is(err, registry.ErrBackend) {
		t.Errorf("release out of memory: %v, want ErrBackend", err)
	}
	res, err := reg.Acquire(ctx, registry.AcquireRequest{Resource: "oom/other", Owner: "o", RequestID: "other", TTL: time.Minute})
	if !errors.Is(err, registry.ErrBackend) {
		t.Fatalf("acquire out of memory: %v (fence %d), want ErrBackend", err, res.View.Lease.Fence)
	}
	for _, sentinel := range []error{registry.ErrLeaseHeld, registry.ErrNotFound} {
		if errors.Is(err, sentinel) {
			t.Errorf("acquire out of memory: %v passes for %v", err, sentinel)
		}
	}
	// Even a view fails: the server refuses every command queued in a
	// MULTI when out of memory, the PING of a view's confirming EXEC too.
	if _, err := reg.Status(ctx, registry.LeaseQuery{Lease: first.View.Lease.Lease}); !errors.Is(err, registry.ErrBackend) {
		t.Errorf("status out of memory: %v, want ErrBackend", err)
	}
	if _, err := be.Lease(ctx, registry.LeaseQuery{Owner: "o", RequestID: "other", Now: time.Now()}); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("request of the refused acquire: %v, want ErrNotFound", err)
	}

	filled.Free(t)
	if _, err := reg.Release(ctx, "o", first.View.Lease.Lease); err != nil {
		t.Fatalf("release once memory is freed: %v", err)
	}
	next, err := reg.Acquire(ctx, registry.AcquireRequest{Resource: "oom/r", Owner: "o", RequestID: "next", TTL: time.Minute})
	if err != nil {
		t.Fatalf("acquire once memory is freed: %v", err)
	}
	if next.View.Lease.Fence != first.View.Lease.Fence+1 {
		t.Errorf("fence once memory is freed: %d, want %d", next.View.Lease.Fence, first.View.Lease.Fence+1)
	}
	if _, err := reg.Acquire(ctx, registry.AcquireRequest{Resource: "oom/other", Owner: "o", RequestID: "other", TTL: time.Minute}); err != nil {
		t.Errorf("the refused acquire once memory is freed: %v", err)
	}
}

// TestOpenRefusesEvictingServer: a server that may evict keys would
// forget issued fences, so Open refuses it (writing nothing, not even the
// schema key) unless AllowEviction is set; a server that hides its policy
// (CONFIG renamed away) is logged and accepted.
func TestOpenRefusesEvictingServer(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t, "--maxmemory-policy", "allkeys-lru")
	s, err := redis.Open(ctx, redis.Options{Addr: srv.Addr()})
	if !errors.Is(err, redis.ErrEvictionPolicy) || s != nil {
		t.Fatalf("Open on allkeys-lru: %v, want ErrEvictionPolicy", err)
	}
	if !strings.Contains(err.Error(), "allkeys-lru") {
		t.Errorf("error %q does not name the policy", err)
	}
	a := raw(t, srv)
	if n, err := a.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Errorf("a refused Open wrote %d keys (%v)", n, err)
	}
	if err := a.ConfigSet(ctx, "maxmemory-policy", "volatile-ttl").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := redis.Open(ctx, redis.Options{Addr: srv.Addr()}); !errors.Is(err, redis.ErrEvictionPolicy) {
		t.Errorf("Open on volatile-ttl: %v, want ErrEvictionPolicy", err)
	}
	if s, err = redis.Open(ctx, redis.Options{Addr: srv.Addr(), AllowEviction: true}); err != nil {
		t.Fatalf("Open with AllowEviction: %v", err)
	}
	s.Close()
	if err := a.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	if s, err = redis.Open(ctx, redis.Options{Addr: srv.Addr()}); err != nil {
		t.Fatalf("Open on noeviction: %v", err)
	}
	s.Close()

	hidden := redistest.Start(t, "--rename-command", "CONFIG", "")
	var log bytes.Buffer
	s, err = redis.Open(ctx, redis.Options{Addr: hidden.Addr(), Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatalf("Open without CONFIG: %v", err)
	}
	s.Close()
	if !strings.Contains(log.String(), "maxmemory-policy") {
		t.Errorf("Open without CONFIG logged %q, want a warning about maxmemory-policy", log.String())
	}
}
