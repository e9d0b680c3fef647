package redis

import (
	"context"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

// Resources whose names look like other resources' key suffixes keep
// separate records, and every key of a resource carries its hash tag.
func TestKeysOfLookalikeResourcesStaySeparate(t *testing.T) {
	s := openPrefix(t, redistest.Start(t), "fg")
	ctx := context.Background()
	resources := []string{"a", "a:rec", "a:q", "a:rcpt:1:1", "a:ops:root-1/1"}
	for i, r := range resources {
		fence := uint64(i + 1)
		in := storetest.Attempt(r, fence, 1, "p")
		if res, err := s.Begin(ctx, in); err != nil || res.Decision != store.DecisionProceed {
			t.Fatalf("%s: %s %v", r, res.Decision, err)
		}
		if _, err := s.Commit(ctx, storetest.Answer(in.Ref())); err != nil {
			t.Fatal(err)
		}
	}
	for i, r := range resources {
		rec, err := s.Record(ctx, r)
		if err != nil || rec.HighestFence != uint64(i+1) || rec.LastSeq != 1 {
			t.Fatalf("%s: %+v %v", r, rec, err)
		}
		rcs, err := s.ReceiptsByOperation(ctx, r, storetest.Root(uint64(i+1))+"/1")
		if err != nil || len(rcs) != 1 || rcs[0].Resource != r {
			t.Fatalf("%s: receipts %+v %v", r, rcs, err)
		}
		k := s.k
		tag := "{" + escape(r) + "}"
		for _, key := range []string{k.record(r), k.receipts(r), k.quarantine(r), k.ops(r, "root/1"),
			k.receipt(store.ReceiptKey{Resource: r, Fence: 1, Seq: 1})} {
			if i := strings.IndexByte(key, '{'); key[i:i+len(tag)] != tag || strings.Count(key, "{") != 1 {
				t.Fatalf("key %q of %q lacks hash tag %s", key, r, tag)
			}
		}
	}
	st, err := s.Stats(ctx)
	if err != nil || st.Resources != len(resources) || st.Receipts != len(resources) {
		t.Fatalf("stats %+v %v", st, err)
	}
}
