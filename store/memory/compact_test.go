package memory_test

import (
	"bytes"
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/memory"
	"github.com/fencegate/fencegate/store/storetest"
)

// With compaction every 1,000 accepted writes, the heap the store holds
// stays flat: after 30,000 writes it is within a small factor of what it was
// after the first 5,000. Without compaction it grows with every receipt
// (about sixfold here).
func TestCompactionKeepsHeapFlat(t *testing.T) {
	const (
		resources = 50
		every     = 1000
		baseline  = 5000
		total     = 30000
		body      = 1 << 10
	)
	ctx := context.Background()
	s := memory.New(memory.Options{})
	defer s.Close()
	retention := store.CompactInput{MaxAge: time.Hour, MaxPerResource: 10, MaxDeletes: 10 * every}
	var base, end uint64
	payload := bytes.Repeat([]byte("x"), body)
	for i := range total {
		resource := "res-" + strconv.Itoa(i%resources)
		in := storetest.Attempt(resource, 1, uint64(i/resources+1), "p"+strconv.Itoa(i))
		in.Now = storetest.T0.Add(time.Duration(i) * time.Second)
		in.Deadline = in.Now.Add(time.Minute)
		in.QuietAt = in.Deadline.Add(time.Minute)
		if res, err := s.Begin(ctx, in); err != nil || res.Decision != store.DecisionProceed {
			t.Fatalf("Begin %d: %s %s %v", i, res.Decision, res.Detail, err)
		}
		ans := storetest.Answer(in.Ref())
		ans.Now = in.Now
		ans.Response.Body = payload
		if _, err := s.Commit(ctx, ans); err != nil {
			t.Fatalf("Commit %d: %v", i, err)
		}
		if n := i + 1; n%every == 0 {
			retention.Now = in.Now
			for {
				r, err := s.Compact(ctx, retention)
				if err != nil {
					t.Fatal(err)
				}
				if !r.More {
					break
				}
			}
			switch n {
			case baseline:
				base = heapInUse()
			case total:
				end = heapInUse()
			}
		}
	}
	t.Logf("heap after %d writes: %d KiB, after %d: %d KiB", baseline, base>>10, total, end>>10)
	if end > 2*base {
		t.Fatalf("heap grew from %d KiB after %d writes to %d KiB after %d, with compaction", base>>10, baseline, end>>10, total)
	}
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Receipts != resources*10 || st.Resources != resources || st.Bytes <= 0 || uint64(st.Bytes) > end {
		t.Fatalf("stats %+v, want %d receipts kept and an estimate within the heap (%d KiB)", st, resources*10, end>>10)
	}
	runtime.KeepAlive(s)
}

// heapInUse returns the bytes of live heap objects after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
