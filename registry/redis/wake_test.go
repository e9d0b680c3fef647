package redis_test

import (
	"testing"
	"time"

	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/registry/internal/wakeuptest"
	"github.com/fencegate/fencegate/registry/redis"
)

// TestReleaseWakesWaiterOnOtherProcess runs two registries ("processes")
// A and B over two backends on one redis-server: A's release wakes B's
// waiting acquire, whose clock nobody advances, through the pub/sub
// notification of A's release alone (wakeuptest.ReleaseWakesWaiter).
func TestReleaseWakesWaiterOnOtherProcess(t *testing.T) {
	srv := redistest.Start(t)
	beA, beB := open(t, srv.Addr()), open(t, srv.Addr())
	t.Cleanup(func() { beA.Close(); beB.Close() })
	wakeuptest.ReleaseWakesWaiter(t, beA, beB, redis.Subscriptions, 5*time.Second)
}

// TestCommitPublishesEnd: the end of a lease is published by the MULTI
// that writes it. A's lease is released through A's backend directly, with
// no Registry on A to notify anyone after the commit, and B's waiter
// (whose timers never fire) is still woken and granted
// (wakeuptest.CommitWakesWaiter).
func TestCommitPublishesEnd(t *testing.T) {
	srv := redistest.Start(t)
	beA, beB := open(t, srv.Addr()), open(t, srv.Addr())
	t.Cleanup(func() { beA.Close(); beB.Close() })
	wakeuptest.CommitWakesWaiter(t, beA, beB, redis.Subscriptions, 5*time.Second)
}
