package etcd_test

import (
	"testing"
	"time"

	"github.com/fencegate/fencegate/internal/etcdtest"
	"github.com/fencegate/fencegate/registry/etcd"
	"github.com/fencegate/fencegate/registry/internal/wakeuptest"
)

// TestReleaseWakesWaiterOnOtherReplica runs two registry replicas A and B
// over two backends on one etcd: A's release wakes B's waiting acquire,
// whose clock nobody advances, through the watch of A's release alone
// (wakeuptest.ReleaseWakesWaiter).
func TestReleaseWakesWaiterOnOtherReplica(t *testing.T) {
	c := etcdtest.Start(t, 1)
	beA, beB := open(t, c.Endpoints()...), open(t, c.Endpoints()...)
	wakeuptest.ReleaseWakesWaiter(t, beA, beB, etcd.Watches, 10*time.Second)
}

// TestCommitWritesWakeUp: the end of a lease is written by the
// transaction that ends it. A's lease is released through A's backend
// directly, with no Registry on A to notify anyone after the commit, and
// B's waiter (whose timers never fire) is still woken and granted, on a
// three-member etcd with A and B on different members
// (wakeuptest.CommitWakesWaiter).
func TestCommitWritesWakeUp(t *testing.T) {
	if testing.Short() {
		t.Skip("three etcd processes")
	}
	c := etcdtest.Start(t, 3)
	beA, beB := open(t, c.Member(0).Endpoint()), open(t, c.Member(2).Endpoint())
	wakeuptest.CommitWakesWaiter(t, beA, beB, etcd.Watches, 10*time.Second)
}
