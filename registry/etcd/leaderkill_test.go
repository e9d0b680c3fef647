package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/internal/etcdtest"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/registrytest"
)

// leader returns the index of the cluster's leader among its members.
func leader(t *testing.T, c *etcdtest.Cluster) int {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i, m := range c.Members() {
		st, err := cli.Status(ctx, m.Endpoint())
		if err == nil && st.Header.MemberId == st.Leader {
			return i
		}
	}
	t.Fatal("no member says it is the leader")
	return -1
}

// TestLeaderKilledDuringAcquires: two registry replicas, each on its own
// member of a three-member etcd, hand one resource back and forth
// (acquire, release) while the leader is killed with SIGKILL half-way.
// An acquire may fail while the cluster elects a new leader (its outcome
// unknown: ErrBackend); the worker then sends the same request again, as
// the registry's API tells clients to, and gets the lease it may already
// have. Invariant: no fence is ever issued twice, and each grant's fence
// is above every fence granted before it; the hand-offs go on after the
// kill.
func TestLeaderKilledDuringAcquires(t *testing.T) {
	if testing.Short() {
		t.Skip("three etcd processes")
	}
	c := etcdtest.Start(t, 3)
	k := registrytest.NewKeys(t)
	lead := leader(t, c)
	// Each replica talks to a member that is not the leader, so that it
	// outlives the kill.
	var others []int
	for i := range c.Members() {
		if i != lead {
			others = append(others, i)
		}
	}
	regs := []*registry.Registry{
		newRegistry(t, open(t, c.Member(others[0]).Endpoint()), k, clock.Real()),
		newRegistry(t, open(t, c.Member(others[1]).Endpoint()), k, clock.Real()),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	const perWorker = 30
	var mu sync.Mutex
	var fences []uint64 // in grant order
	var retried int
	var wg sync.WaitGroup
	killed := make(chan struct{})
	var once sync.Once
	errs := make(chan error, 2)
	for w, reg := range regs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("worker-%d", w)
			for i := range perWorker {
				if w == 0 && i == perWorker/2 {
					once.Do(func() { c.Member(lead).Kill(); close(killed) })
				}
				req := registry.AcquireRequest{Resource: "kill/r", Owner: owner, RequestID: fmt.Sprintf("%s-%d", owner, i), TTL: 3 * time.Second, Wait: 20 * time.Second}
				var res registry.Result
				var err error
				for attempt := 0; ; attempt++ {
					res, err = reg.Acquire(ctx, req)
					if err == nil || !errors.Is(err, registry.ErrBackend) || attempt == 20 {
						break
					}
					mu.Lock()
					retried++
					mu.Unlock()
				}
				if err != nil {
					errs <- fmt.Errorf("%s acquire %d: %w", owner, i, err)
					return
				}
				mu.Lock()
				fences = append(fences, res.View.Lease.Fence)
				mu.Unlock()
				for attempt := 0; ; attempt++ {
					_, err = reg.Release(ctx, owner, res.View.Lease.Lease)
					if err == nil || !errors.Is(err, registry.ErrBackend) || attempt == 20 {
						break
					}
				}
				if err != nil {
					errs <- fmt.Errorf("%s release %d: %w", owner, i, err)
					return
				}
			}
		}()
	}
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
	if len(fences) != 2*perWorker {
		t.Fatalf("%d grants, want %d", len(fences), 2*perWorker)
	}
	seen := map[uint64]bool{}
	for i, f := range fences {
		if seen[f] {
			t.Fatalf("fence %d issued twice (grants in order: %v)", f, fences)
		}
		seen[f] = true
		if i > 0 && f <= fences[i-1] {
			t.Fatalf("grant %d has fence %d, not above the one before it (%d): %v", i, f, fences[i-1], fences)
		}
	}
	sorted := append([]uint64(nil), fences...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	t.Logf("%d grants, fences %d..%d, %d acquires sent again after an unknown outcome", len(fences), sorted[0], sorted[len(sorted)-1], retried)
}
