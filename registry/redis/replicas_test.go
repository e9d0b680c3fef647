package redis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/internal/redisconf"
	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/redis"
	"github.com/fencegate/fencegate/registry/registrytest"
)

// TestMinReplicas: with MinReplicas 1 a grant is answered only once a
// replica holds its fence, so a failover to that replica cannot issue it
// again. With the replica gone, an acquire fails (registry.ErrBackend,
// its outcome unknown), and once the replica is back the same request ID
// returns the same lease: the fence was issued once.
func TestMinReplicas(t *testing.T) {
	primary := redistest.Start(t)
	replica := redistest.StartReplica(t, primary)
	ctx := context.Background()
	be, err := redis.OpenBackend(ctx, redis.Options{Addr: primary.Addr(), MinReplicas: 1, ReplicaTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	reg := newRegistry(t, be, registrytest.NewKeys(t), nil)

	res, err := reg.Acquire(ctx, registry.AcquireRequest{Resource: "repl/r", Owner: "alice", RequestID: "a1"})
	if err != nil {
		t.Fatalf("acquire with the replica up: %v", err)
	}
	rc := goredis.NewClient(&goredis.Options{Addr: replica.Addr()})
	defer rc.Close()
	if raw, err := rc.Get(ctx, "{fgreg}:res:repl/r").Result(); err != nil || raw == "" {
		t.Fatalf("the replica lacks the resource record once the grant was answered: %v", err)
	}
	if _, err := reg.Release(ctx, "alice", res.View.Lease.Lease); err != nil {
		t.Fatal(err)
	}

	replica.Kill()
	req := registry.AcquireRequest{Resource: "repl/r", Owner: "bob", RequestID: "b1"}
	if _, err := reg.Acquire(ctx, req); !errors.Is(err, registry.ErrBackend) || !errors.Is(err, redisconf.ErrNotReplicated) {
		t.Fatalf("acquire with no replica: %v, want ErrBackend wrapping ErrNotReplicated", err)
	}
	replica.Restart()
	replica.WaitLinkUp()
	again, err := reg.Acquire(ctx, req)
	if err != nil {
		t.Fatalf("the same acquire once the replica is back: %v", err)
	}
	if again.View.Lease.Fence != res.View.Lease.Fence+1 {
		t.Errorf("fence %d after the unreplicated acquire was retried, want %d (issued once)", again.View.Lease.Fence, res.View.Lease.Fence+1)
	}
}
