package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
)

// TestRegistrySIGKILL kills the registry process with SIGKILL while
// workers acquire and release, restarts it on the same bbolt file, and
// checks that no fence is ever issued twice: every fence a worker was
// answered with is at most the resource's stored lastFence, and every fence
// issued after the restart is above all of them.
func TestRegistrySIGKILL(t *testing.T) {
	dataDir := t.TempDir()
	resources := []string{"crash/a", "crash/b", "crash/c"}
	seen := map[string]uint64{} // highest fence answered per resource, over all rounds
	var total int
	for round := range 4 {
		reg := startRegistry(t, dataDir)
		// Every fence issued from here on must exceed what was seen before.
		floor := map[string]uint64{}
		for k, v := range seen {
			floor[k] = v
		}
		var mu sync.Mutex
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for w := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, _ := client.New(reg.url, client.WithIdentityHeader("X-Fencegate-Identity", fmt.Sprintf("worker-%d-%d", round, w)))
				for i := 0; ctx.Err() == nil; i++ {
					res := resources[(w+i)%len(resources)]
					l, err := c.Acquire(ctx, client.AcquireRequest{Resource: res, RequestID: fmt.Sprintf("r%d-w%d-%d", round, w, i), TTL: 150 * time.Millisecond, Wait: 500 * time.Millisecond})
					if err != nil {
						if errors.Is(err, client.ErrLeaseHeld) {
							continue
						}
						return // the registry is gone
					}
					mu.Lock()
					if l.FenceToken <= floor[res] {
						t.Errorf("round %d: fence %d for %s reissued (a fence <= %d was answered before the restart)", round, l.FenceToken, res, floor[res])
					}
					seen[res] = max(seen[res], l.FenceToken)
					total++
					mu.Unlock()
					if rand.IntN(2) == 0 {
						_, _ = c.Release(ctx, l.Lease)
					}
				}
			}()
		}
		time.Sleep(time.Duration(300+rand.IntN(500)) * time.Millisecond)
		reg.kill() // SIGKILL mid-load
		cancel()
		wg.Wait()
	}

	// Final restart: the stored sequence covers every answered fence, and the
	// next grant continues above it.
	reg := startRegistry(t, dataDir)
	c, _ := client.New(reg.url, client.WithIdentityHeader("X-Fencegate-Identity", "checker"))
	for _, res := range resources {
		r, err := c.Resource(context.Background(), res)
		if err != nil {
			t.Fatal(err)
		}
		if r.LastFence < seen[res] {
			t.Errorf("%s: stored lastFence %d is below the answered fence %d: a granted fence was lost", res, r.LastFence, seen[res])
		}
		l, err := c.Acquire(context.Background(), client.AcquireRequest{Resource: res, RequestID: "final-" + res[len(res)-1:], TTL: time.Second, Wait: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if l.FenceToken <= seen[res] {
			t.Errorf("%s: fence %d after restart is not above %d", res, l.FenceToken, seen[res])
		}
	}
	if total == 0 {
		t.Fatal("no grant was issued under load")
	}
	t.Logf("%d grants answered across 4 SIGKILLs; highest fences %v", total, seen)
}
