package redis_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/redis"
	"github.com/fencegate/fencegate/registry/registrytest"
)

// TestListLeasesWalksEveryScan: a lease listing walks the whole keyspace,
// over many SCAN batches, and past the compaction's ScanLimit (which
// bounds EachLease, not ListLeases): every one of 12 leases is listed
// once with a SCAN COUNT of 1 and a ScanLimit of 2.
func TestListLeasesWalksEveryScan(t *testing.T) {
	srv := redistest.Start(t)
	be, err := redis.OpenBackend(context.Background(), redis.Options{Addr: srv.Addr(), ScanBatch: 1, ScanLimit: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = be.Close() })
	reg, err := registry.New(registry.Options{Backend: be, Signer: registrytest.NewKeys(t).Signer, Metrics: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	const n = 12
	for i := range n {
		r := "scan/r" + strconv.Itoa(i)
		if _, err := reg.Acquire(context.Background(), registry.AcquireRequest{Resource: r, Owner: "o", RequestID: "q" + strconv.Itoa(i), TTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	p, err := reg.Leases(context.Background(), registry.LeasesQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, v := range p.Leases {
		if seen[v.Lease.Lease] {
			t.Errorf("lease %s listed twice", v.Lease.Lease)
		}
		seen[v.Lease.Lease] = true
	}
	if len(seen) != n {
		t.Errorf("listed %d leases, want %d", len(seen), n)
	}
}
