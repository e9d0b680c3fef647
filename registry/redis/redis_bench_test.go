package redis_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/redis"
	"github.com/fencegate/fencegate/registry/registrytest"
)

// Compare with registry/bolt's BenchmarkAcquire:
//
//	go test -run '^$' -bench 'Acquire' -benchtime 2000x ./registry/bolt/ ./registry/redis/
//
// One acquire is one optimistic step: a WATCH+GET round trip per key the
// snapshot reads (meta, policies, request index, resource, holder lease:
// five), then MULTI/EXEC of the change, which with appendfsync always is
// one AOF write and fsync before the reply.

// latencies collects per-operation durations and reports percentiles.
type latencies []time.Duration

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	s := slices.Clone(l)
	slices.Sort(s)
	at := func(p float64) float64 {
		i := int(p * float64(len(s)-1))
		return float64(s[i].Nanoseconds()) / 1e3
	}
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}

// benchAcquire measures Registry.Acquire granting a lease on a new
// resource each time, on a private redis-server started with args.
func benchAcquire(b *testing.B, args ...string) {
	srv := redistest.Start(b, args...)
	// AllowNonDurable for BenchmarkAcquireNoPersistence's server.
	be, err := redis.OpenBackend(context.Background(), redis.Options{Addr: srv.Addr(), AllowNonDurable: true})
	if err != nil {
		b.Fatalf("open: %v", err)
	}
	b.Cleanup(func() { be.Close() })
	reg := newRegistry(b, be, registrytest.NewKeys(b), nil)
	ctx := context.Background()
	lat := make(latencies, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		_, err := reg.Acquire(ctx, registry.AcquireRequest{
			Resource: fmt.Sprintf("bench/r%d", i), Owner: "bench-owner", RequestID: fmt.Sprintf("b-%d", i), TTL: time.Minute,
		})
		lat = append(lat, time.Since(start))
		if err != nil {
			b.Fatalf("acquire: %v", err)
		}
	}
	b.StopTimer()
	lat.report(b)
}

// BenchmarkAcquire measures a granted acquire on Redis with the durable
// settings (AOF, fsync before every reply).
func BenchmarkAcquire(b *testing.B) { benchAcquire(b, durable...) }

// BenchmarkAcquireNoPersistence is BenchmarkAcquire with persistence off
// (not a supported setting: it shows the cost of the fsync).
func BenchmarkAcquireNoPersistence(b *testing.B) { benchAcquire(b, "--appendonly", "no") }

// BenchmarkAcquireParallel measures acquires of distinct resources from
// many goroutines of one registry: every write touches the meta key, so
// one process's steps are serialized (and other processes' would conflict).
func BenchmarkAcquireParallel(b *testing.B) {
	srv := redistest.Start(b, durable...)
	be := open(b, srv.Addr())
	b.Cleanup(func() { be.Close() })
	reg := newRegistry(b, be, registrytest.NewKeys(b), nil)
	ctx := context.Background()
	var n atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			if _, err := reg.Acquire(ctx, registry.AcquireRequest{
				Resource: fmt.Sprintf("bench/p%d", i), Owner: "bench-owner", RequestID: fmt.Sprintf("p-%d", i), TTL: time.Minute,
			}); err != nil {
				b.Errorf("acquire: %v", err)
				return
			}
		}
	})
}

// BenchmarkAnchorBatch is registry/bolt's BenchmarkAnchorBatch on Redis
// with the durable settings: one WATCH+MGET of the batch's anchors, the
// store's record and the lineage, then one MULTI/EXEC (one AOF fsync).
func BenchmarkAnchorBatch(b *testing.B) {
	for _, size := range []int{1, 64} {
		b.Run(fmt.Sprintf("items=%d", size), func(b *testing.B) {
			srv := redistest.Start(b, durable...)
			be := open(b, srv.Addr())
			b.Cleanup(func() { be.Close() })
			registrytest.BenchAnchorBatch(b, be, size)
		})
	}
}
