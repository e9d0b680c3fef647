package etcd_test

import (
	"testing"
	"time"

	"github.com/fencegate/fencegate/clock/clocktest"
	"github.com/fencegate/fencegate/internal/etcdtest"
	"github.com/fencegate/fencegate/registry/registrytest"
)

// BenchmarkHandoffAcrossProcesses measures a lock hand-off between two
// registry replicas sharing one etcd member: from the start of a release
// on registry A to the grant of the acquire waiting on registry B, which
// A's release wakes through B's watch of the wake-up keys. B's timers are
// on a fake clock nobody advances, so every hand-off is a wake-up by the
// watch (without it B would wait for the holder's expiry).
//
//	go test -run '^$' -bench HandoffAcrossProcesses -benchtime 1000x ./registry/etcd/ ./registry/redis/
func BenchmarkHandoffAcrossProcesses(b *testing.B) {
	c := etcdtest.Start(b, 1)
	k := registrytest.NewKeys(b)
	beA, beB := open(b, c.Endpoints()...), open(b, c.Endpoints()...)
	clkB := clocktest.New(time.Time{})
	regA := newRegistry(b, beA, k, clocktest.New(time.Time{}))
	regB := newRegistry(b, beB, k, clkB)
	registrytest.BenchHandoff(b, regA, regB, clkB)
}

// BenchmarkHandoff measures release -> the waiting acquire's grant in one
// registry process on etcd: the release's own commit wakes the waiter in
// its process (registrytest.BenchHandoff).
//
//	go test -run '^$' -bench Handoff -benchtime 1000x ./registry/bolt/ ./registry/redis/ ./registry/etcd/
func BenchmarkHandoff(b *testing.B) {
	c := etcdtest.Start(b, 1)
	be := open(b, c.Endpoints()...)
	clk := clocktest.New(time.Time{})
	reg := newRegistry(b, be, registrytest.NewKeys(b), clk)
	registrytest.BenchHandoff(b, reg, reg, clk)
}
