package redis_test

import (
	"testing"
	"time"

	"github.com/fencegate/fencegate/clock/clocktest"
	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/registry/registrytest"
)

// BenchmarkHandoffAcrossProcesses measures a lock hand-off between two
// registry processes sharing one Redis (durable settings): from the start
// of a release on registry A to the grant of the acquire waiting on
// registry B, which A's release wakes through Redis pub/sub. B's timers
// are on a fake clock nobody advances, so every hand-off is a wake-up by
// notification (without it B would wait for the holder's expiry).
//
//	go test -run '^$' -bench HandoffAcrossProcesses -benchtime 500x ./registry/redis/
func BenchmarkHandoffAcrossProcesses(b *testing.B) {
	srv := redistest.Start(b, durable...)
	k := registrytest.NewKeys(b)
	beA, beB := open(b, srv.Addr()), open(b, srv.Addr())
	b.Cleanup(func() { beA.Close(); beB.Close() })
	clkB := clocktest.New(time.Time{})
	regA := newRegistry(b, beA, k, clocktest.New(time.Time{}))
	regB := newRegistry(b, beB, k, clkB)
	registrytest.BenchHandoff(b, regA, regB, clkB)
}

// BenchmarkHandoff measures release -> the waiting acquire's grant in one
// registry process on Redis (durable settings): the release's own commit
// wakes the waiter in its process (registrytest.BenchHandoff).
//
//	go test -run '^$' -bench Handoff -benchtime 500x ./registry/bolt/ ./registry/redis/
func BenchmarkHandoff(b *testing.B) {
	srv := redistest.Start(b, durable...)
	be := open(b, srv.Addr())
	b.Cleanup(func() { be.Close() })
	clk := clocktest.New(time.Time{})
	reg := newRegistry(b, be, registrytest.NewKeys(b), clk)
	registrytest.BenchHandoff(b, reg, reg, clk)
}
