package redis

import (
	"context"
	"errors"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

// TestTrimKeepsIndexesAndCounters: the step script's trim (step.lua)
// deletes what DeleteReceipt would, for a resource and operation root
// full of the bytes the keys escape and JSON encodes: each trimmed
// receipt's key, its operation-index entry (the set key gone with its
// last member) and its receipts-index member, and it moves the receipt
// counter and P:bytes by exactly what it deleted.
func TestTrimKeepsIndexesAndCounters(t *testing.T) {
	srv := redistest.Start(t)
	s := openPrefix(t, srv, "trim")
	a := admin(t, srv)
	ctx := context.Background()
	const resource, root = "t:x:rcpt:1/@~", `r:{1}%3A "q"\<&>` + "\u2028é"
	const n, keep = 6, 2
	for seq := uint64(1); seq <= n; seq++ {
		in := storetest.Attempt(resource, 3, seq, "p")
		in.Root = root
		if res, err := s.Begin(ctx, in); err != nil || res.Decision != store.DecisionProceed {
			t.Fatalf("Begin %d: %s %v", seq, res.Decision, err)
		}
		c := storetest.Answer(in.Ref())
		c.KeepReceipts = keep
		if _, err := s.Commit(ctx, c); err != nil {
			t.Fatalf("Commit %d: %v", seq, err)
		}
	}
	k := s.k
	for seq := uint64(1); seq <= n; seq++ {
		ref := store.OpRef{Resource: resource, Fence: 3, Root: root, Seq: seq}
		gone := seq <= n-keep
		exists, err := a.Exists(ctx, k.receipt(store.ReceiptKey{Resource: resource, Fence: 3, Seq: seq}), k.ops(resource, ref.OperationID())).Result()
		if err != nil {
			t.Fatal(err)
		}
		member, err := a.ZScore(ctx, k.receipts(resource), member(3, seq)).Result()
		inIndex := err == nil && member == 0
		_, rerr := s.ReceiptsByOperation(ctx, resource, ref.OperationID())
		if gone && (exists != 0 || inIndex || !errors.Is(rerr, store.ErrNotFound)) {
			t.Errorf("segment %d, trimmed: %d of its receipt and operation keys left, in the receipts index %v, by operation %v", seq, exists, inIndex, rerr)
		}
		if !gone && (exists != 2 || !inIndex || rerr != nil) {
			t.Errorf("segment %d, kept: %d of its receipt and operation keys, in the receipts index %v, by operation %v", seq, exists, inIndex, rerr)
		}
	}
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var stored int64
	for _, key := range append([]string{k.record(resource)}, keysOf(t, a, k.res(resource)+"rcpt:*")...) {
		v, err := a.Get(ctx, key).Bytes()
		if err != nil {
			t.Fatal(err)
		}
		stored += int64(len(v))
	}
	if st.Receipts != keep || st.Bytes != stored {
		t.Errorf("stats %+v; want %d receipts and %d bytes (what is stored)", st, keep, stored)
	}
}

func keysOf(t *testing.T, a *goredis.Client, pattern string) []string {
	t.Helper()
	ks, err := a.Keys(context.Background(), pattern).Result()
	if err != nil {
		t.Fatal(err)
	}
	return ks
}
