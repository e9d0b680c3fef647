package etcd_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/internal/etcdtest"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/etcd"
)

// TestCompactManyLeases: a registry batch of 1000 compactable leases
// (registry.CompactBatch) is more deletions than one etcd transaction may
// hold (--max-txn-ops 1024, three deletes per lease); the backend deletes
// them in several transactions and reports every one, with their index
// entries, and keeps the held lease.
func TestCompactManyLeases(t *testing.T) {
	c := etcdtest.Start(t, 1)
	be, err := etcd.OpenBackend(context.Background(), etcd.Options{Endpoints: c.Endpoints(), ScanLimit: 5000})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	s := openStore(t, etcd.Options{Endpoints: c.Endpoints()})
	ctx := context.Background()
	const ended = 700
	for i := 0; i < ended; i += 100 {
		err := s.Update(ctx, func(tx registry.Tx) error {
			for j := i; j < i+100; j++ {
				l := registry.LeaseRecord{Lease: fmt.Sprintf("lease-%04d", j), Resource: "cm/r", Owner: "o", RequestID: fmt.Sprintf("q%d", j),
					State: fencegate.StateReleased, EndedAt: 1, Token: "t", Digest: fmt.Sprintf("d%d", j)}
				for _, err := range []error{tx.PutLease(l), tx.PutRequest(l.Owner, l.RequestID, l.Lease), tx.PutDigest(l.Digest, l.Lease)} {
					if err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("write leases: %v", err)
		}
	}
	err = s.Update(ctx, func(tx registry.Tx) error {
		return tx.PutLease(registry.LeaseRecord{Lease: "lease-held", Resource: "cm/h", State: fencegate.StateHeld, Token: "t", Digest: "dh"})
	})
	if err != nil {
		t.Fatal(err)
	}
	n, err := be.Compact(ctx, time.UnixMilli(1000), registry.CompactBatch)
	if err != nil || n != ended {
		t.Fatalf("Compact: %d, %v; want %d", n, err, ended)
	}
	cli := rawClient(t, c)
	for _, p := range []string{"fgreg/lease/", "fgreg/req/", "fgreg/dig/"} {
		resp, err := cli.Get(ctx, p, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		if want := int64(0); p == "fgreg/lease/" && resp.Count != 1 || p != "fgreg/lease/" && resp.Count != want {
			t.Errorf("%s: %d keys left after the compaction", p, resp.Count)
		}
	}
}
