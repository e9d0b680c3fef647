package redis

import (
	"context"
	"errors"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/internal/redisconf"
	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

// TestMinReplicas: with MinReplicas 1 a write is answered once a replica
// has it; with the replica gone, Begin fails (an error, not a decision)
// within ReplicaTimeout, and its marker, which is on the primary, keeps
// the segment from proceeding (BUSY) instead of letting it run twice.
func TestMinReplicas(t *testing.T) {
	primary := redistest.Start(t)
	replica := redistest.StartReplica(t, primary)
	ctx := context.Background()
	s, err := Open(ctx, Options{Addr: primary.Addr(), Prefix: "repl", CallerClock: true,
		MinReplicas: 1, ReplicaTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	first := storetest.Attempt("repl/r", 1, 1, "a")
	if res, err := s.Begin(ctx, first); err != nil || res.Decision != store.DecisionProceed {
		t.Fatalf("Begin with the replica up: %v %v", res.Decision, err)
	}
	if _, err := s.Commit(ctx, storetest.Answer(first.Ref())); err != nil {
		t.Fatalf("Commit with the replica up: %v", err)
	}
	rc := goredis.NewClient(&goredis.Options{Addr: replica.Addr()})
	defer rc.Close()
	if n, err := rc.Exists(ctx, s.k.record("repl/r"), s.k.receipt(store.ReceiptKey{Resource: "repl/r", Fence: 1, Seq: 1})).Result(); err != nil || n != 2 {
		t.Fatalf("the replica holds %d of the record and receipt once Commit returned (%v)", n, err)
	}

	replica.Kill()
	second := storetest.Attempt("repl/r", 1, 2, "b")
	_, err = s.Begin(ctx, second)
	if !errors.Is(err, redisconf.ErrNotReplicated) {
		t.Fatalf("Begin with no replica: %v, want ErrNotReplicated", err)
	}
	if errors.Is(err, store.ErrInvalidInput) || errors.Is(err, store.ErrConflict) {
		t.Fatalf("a replication failure passes for a decision: %v", err)
	}
	// The marker is on the primary: the same segment does not run again.
	s2, err := Open(ctx, Options{Addr: primary.Addr(), Prefix: "repl", CallerClock: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if res, err := s2.Begin(ctx, second); err != nil || res.Decision != store.DecisionBusy {
		t.Fatalf("the same segment after the failed Begin: %v %v, want BUSY", res.Decision, err)
	}
}
