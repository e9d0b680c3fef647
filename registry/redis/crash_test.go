package redis_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/registrytest"
)

// durable are the redis-server arguments under which the registry's
// promise holds: every EXEC is in the AOF and fsynced before its reply.
var durable = []string{"--appendonly", "yes", "--appendfsync", "always"}

var crashResources = []string{"crash/r0", "crash/r1", "crash/r2", "crash/r3"}

// TestCrashKeepsFences grants leases in a tight loop while the test kills
// its redis-server with SIGKILL at a random moment, restarts it on the
// same directory (AOF with appendfsync always), and checks, over several
// rounds, that every resource's stored LastFence is at least every fence
// an Acquire returned, that fences keep increasing across the crash (none
// is reissued), and that a lease held before the crash is still held
// after it (a second owner is refused).
func TestCrashKeepsFences(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts redis-server")
	}
	srv := redistest.Start(t, durable...)
	ctx := context.Background()
	k := registrytest.NewKeys(t)

	// A lease held across every crash.
	be := open(t, srv.Addr())
	reg := newRegistry(t, be, k, nil)
	held, err := reg.Acquire(ctx, registry.AcquireRequest{Resource: "crash/held", Owner: "keeper", RequestID: "keep", TTL: registry.DefaultMaxTTL})
	if err != nil {
		t.Fatalf("acquire the held lease: %v", err)
	}
	be.Close()

	reported := map[string]uint64{} // highest fence an Acquire returned, all rounds
	stored := map[string]uint64{}   // LastFence read after the previous round
	const rounds = 4
	total := 0
	for round := range rounds {
		be := open(t, srv.Addr())
		reg := newRegistry(t, be, k, nil) // the real clock

		var (
			mu     sync.Mutex
			got    = map[string][]uint64{}
			done   = make(chan error, 1)
			first  = make(chan struct{})
			closed bool
		)
		go func() {
			owner := fmt.Sprintf("crash-%d", round)
			for i := 0; ; i++ {
				res := crashResources[i%len(crashResources)]
				r, err := reg.Acquire(ctx, registry.AcquireRequest{Resource: res, Owner: owner, RequestID: fmt.Sprintf("c%d-%d", round, i), TTL: registry.DefaultMinTTL})
				if errors.Is(err, registry.ErrLeaseHeld) {
					continue
				}
				if err != nil {
					done <- err
					return
				}
				mu.Lock()
				got[res] = append(got[res], r.View.Lease.Fence)
				if !closed {
					closed = true
					close(first)
				}
				mu.Unlock()
				if i%17 == 16 {
					continue // abandoned: it expires
				}
				if _, err := reg.Release(ctx, owner, r.View.Lease.Lease); err != nil {
					done <- err
					return
				}
			}
		}()
		select {
		case <-first:
		case err := <-done:
			t.Fatalf("round %d: the loop granted nothing: %v", round, err)
		}
		time.Sleep(time.Duration(100+rand.IntN(200)) * time.Millisecond)
		srv.Kill()
		loopErr := <-done
		if !errors.Is(loopErr, registry.ErrBackend) {
			t.Errorf("round %d: the loop ended with %v, want ErrBackend", round, loopErr)
		}
		be.Close()
		srv.Restart()

		be = open(t, srv.Addr())
		for _, res := range crashResources {
			fences := got[res]
			total += len(fences)
			floor := max(reported[res], stored[res])
			for _, f := range fences {
				if f <= floor {
					t.Errorf("round %d: %s: fence %d reissued or out of order (at or below %d)", round, res, f, floor)
				}
				floor = f
			}
			if len(fences) > 0 {
				reported[res] = fences[len(fences)-1]
			}
			v, err := be.Resource(ctx, res, time.Now())
			if err != nil {
				t.Fatalf("round %d: read %s: %v", round, res, err)
			}
			if v.Record.LastFence < reported[res] {
				t.Errorf("round %d: %s: stored LastFence %d is below returned fence %d: a granted fence was lost", round, res, v.Record.LastFence, reported[res])
			}
			if v.Record.LastFence < stored[res] {
				t.Errorf("round %d: %s: stored LastFence went back from %d to %d", round, res, stored[res], v.Record.LastFence)
			}
			stored[res] = v.Record.LastFence
		}
		reg = newRegistry(t, be, k, nil)
		st, err := reg.Status(ctx, registry.LeaseQuery{Lease: held.View.Lease.Lease})
		if err != nil || st.View.State != fencegate.StateHeld {
			t.Errorf("round %d: the lease held before the crash: %v %s, want HELD", round, err, st.View.State)
		}
		if _, err := reg.Acquire(ctx, registry.AcquireRequest{Resource: "crash/held", Owner: "thief", RequestID: fmt.Sprintf("thief-%d", round), TTL: time.Minute}); !errors.Is(err, registry.ErrLeaseHeld) {
			t.Errorf("round %d: acquire of the held resource by another owner: %v, want ErrLeaseHeld", round, err)
		}
		be.Close()
		t.Logf("round %d: LastFence %v", round, stored)
	}
	if total == 0 {
		t.Fatal("no grant at all")
	}
}
