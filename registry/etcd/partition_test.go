package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/internal/etcdtest"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/etcd"
	"github.com/fencegate/fencegate/registry/registrytest"
)

// TestPartitionedMemberRefuses: member 0 of three is cut off from its
// peers (its clients still reach it). Replica "minority", whose client
// talks only to member 0, refuses every acquire with ErrBackend (its
// linearizable reads find no quorum: nothing is decided on member 0's
// stale view), and its wake-up watch, which requires a leader, is
// cancelled; replica "majority", on members 1 and 2, keeps granting.
// Healed, the minority's watch is established again, and its acquires
// (the refused requests sent again with the same IDs, as a client
// would) are granted with fences above every fence the majority issued,
// and an end the majority committed while it was cut off still reaches a
// subscription of the minority's.
func TestPartitionedMemberRefuses(t *testing.T) {
	if testing.Short() {
		t.Skip("three etcd processes")
	}
	c := etcdtest.StartPartitionable(t, 3)
	k := registrytest.NewKeys(t)
	minBE := openWith(t, etcd.Options{Endpoints: []string{c.Member(0).Endpoint()}, RetryFor: time.Second, AttemptTimeout: time.Second})
	minority := newRegistry(t, minBE, k, clock.Real())
	majority := newRegistry(t, openWith(t, etcd.Options{Endpoints: []string{c.Member(1).Endpoint(), c.Member(2).Endpoint()}, RetryFor: 10 * time.Second}), k, clock.Real())
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var log grantLog
	cycle := func(reg *registry.Registry, owner, id string) error {
		res, err := reg.Acquire(ctx, registry.AcquireRequest{Resource: "part/r", Owner: owner, RequestID: id, TTL: time.Minute})
		if err != nil {
			return err
		}
		log.add(res)
		if _, err := reg.Release(ctx, owner, res.View.Lease.Lease); err != nil {
			t.Fatalf("%s release %s: %v", owner, id, err)
		}
		return nil
	}
	for i := range 2 {
		if err := cycle(minority, "min", fmt.Sprintf("before-%d", i)); err != nil {
			t.Fatal(err)
		}
		if err := cycle(majority, "maj", fmt.Sprintf("before-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	// A lease held through the minority, ended through the majority
	// while partitioned: the minority must not state it held.
	held, err := minority.Acquire(ctx, registry.AcquireRequest{Resource: "part/s", Owner: "min", RequestID: "held", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	_, endedBefore := etcd.WatchCounts(minBE)
	// A subscription of the minority's, from before the partition: the
	// end of "part/s" the majority commits while it is cut off reaches it
	// once healed (its watch resumes after the last revision it saw).
	sub := minBE.(registry.Notifier).Subscribe(ctx)

	c.Partition(0)
	var refused []string
	for i := range 3 {
		id := fmt.Sprintf("during-%d", i)
		err := cycle(minority, "min", id)
		if !errors.Is(err, registry.ErrBackend) {
			t.Fatalf("minority acquire %s while partitioned: %v, want ErrBackend", id, err)
		}
		refused = append(refused, id)
		if err := cycle(majority, "maj", fmt.Sprintf("during-%d", i)); err != nil {
			t.Fatalf("majority acquire while member 0 is cut off: %v", err)
		}
	}
	if _, err := majority.Release(ctx, "min", held.View.Lease.Lease); err != nil {
		t.Fatalf("majority's release of the minority's lease: %v", err)
	}
	if st, err := minority.Status(ctx, registry.LeaseQuery{Lease: held.View.Lease.Lease}); !errors.Is(err, registry.ErrBackend) {
		t.Fatalf("minority's status of a lease the majority released: %v %v, want ErrBackend (never a stale view)", st.View.State, err)
	}
	// The watch requires a leader: member 0 cancels it (it lost its
	// leader). Liveness bound: ctx.
	for _, ended := etcd.WatchCounts(minBE); ended == endedBefore; _, ended = etcd.WatchCounts(minBE) {
		if ctx.Err() != nil {
			t.Fatal("the minority's wake-up watch was never cancelled")
		}
		time.Sleep(10 * time.Millisecond)
	}
	log.mu.Lock()
	highest := log.fences[len(log.fences)-1]
	log.mu.Unlock()

	startedHealed, _ := etcd.WatchCounts(minBE) // none confirmed without a leader
	c.Heal()
	for _, id := range refused {
		var err error
		// Sent again until member 0 is back in the quorum (a client
		// retries ErrBackend with the same request ID).
		for err = cycle(minority, "min", id); errors.Is(err, registry.ErrBackend) && ctx.Err() == nil; err = cycle(minority, "min", id) {
		}
		if err != nil {
			t.Fatalf("minority acquire %s after the heal: %v", id, err)
		}
	}
	for started, _ := etcd.WatchCounts(minBE); started == startedHealed; started, _ = etcd.WatchCounts(minBE) {
		if ctx.Err() != nil {
			t.Fatal("the minority's wake-up watch was not established again after the heal")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for r := range sub {
		if r == "part/s" {
			break
		}
	}
	if ctx.Err() != nil {
		t.Fatal("the end of part/s committed during the partition never reached the minority's subscription")
	}
	st, err := minority.Status(ctx, registry.LeaseQuery{Lease: held.View.Lease.Lease})
	if err != nil || st.View.State != fencegate.StateReleased {
		t.Fatalf("minority's status after the heal: %v %v, want RELEASED", st.View.State, err)
	}
	log.check(t)
	log.mu.Lock()
	defer log.mu.Unlock()
	healed := log.fences[len(log.fences)-len(refused)]
	if healed <= highest {
		t.Fatalf("the minority's first grant after the heal has fence %d, not above the majority's %d (fences %v)", healed, highest, log.fences)
	}
	t.Logf("fences in grant order %v; majority's highest while partitioned %d", log.fences, highest)
}
