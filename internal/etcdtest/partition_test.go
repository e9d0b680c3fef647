package etcdtest_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegate/fencegate/internal/etcdtest"
)

// TestPartitionCutsMemberOff: a member partitioned from the other two
// cannot serve a linearizable read (no leader, no quorum) while the two
// commit a write; healed, it serves the write.
func TestPartitionCutsMemberOff(t *testing.T) {
	c := etcdtest.StartPartitionable(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	alone := client(t, c.Member(0).Endpoint())
	rest := client(t, c.Member(1).Endpoint(), c.Member(2).Endpoint())
	if _, err := alone.Put(ctx, "k", "before"); err != nil {
		t.Fatal(err)
	}
	c.Partition(0)
	for {
		rctx, rcancel := context.WithTimeout(clientv3.WithRequireLeader(ctx), 2*time.Second)
		_, err := alone.Get(rctx, "k")
		rcancel()
		if err != nil {
			break // refused: the member lost its leader
		}
		if ctx.Err() != nil {
			t.Fatal("the partitioned member kept serving linearizable reads")
		}
	}
	if _, err := rest.Put(ctx, "k", "during"); err != nil {
		t.Fatalf("the majority's write: %v", err)
	}
	c.Heal()
	resp, err := alone.Get(ctx, "k")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "during" {
		t.Fatalf("healed member reads %v %v, want during", resp, err)
	}
}
