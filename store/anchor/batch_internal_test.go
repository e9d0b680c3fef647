package anchor

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/fencegate/fencegate"
)

// The batcher: while one call is in flight the next submissions queue and
// form the next call, whole, at most MaxAnchorBatch items; one call at a
// time; each caller gets its own results.
func TestBatcher(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var sizes []int
	inFlight, maxIn := 0, 0
	b := &batcher{}
	b.send = func(_ context.Context, items []fencegate.AnchorItem) (fencegate.AnchorResponse, error) {
		mu.Lock()
		inFlight++
		maxIn = max(maxIn, inFlight)
		first := len(sizes) == 0
		sizes = append(sizes, len(items))
		mu.Unlock()
		if first {
			<-release
		}
		resp := fencegate.AnchorResponse{Lineage: "l"}
		for _, it := range items {
			resp.Results = append(resp.Results, fencegate.AnchorResult{Resource: it.Resource, Outcome: fencegate.AnchorAnchored, Anchored: it.Next})
		}
		mu.Lock()
		inFlight--
		mu.Unlock()
		return resp, nil
	}
	item := func(r string, fence uint64) fencegate.AnchorItem {
		return fencegate.AnchorItem{Resource: r, Op: fencegate.AnchorSeed, Next: fencegate.Progress{Fence: fence, Root: "r"}}
	}
	var wg sync.WaitGroup
	check := func(items []fencegate.AnchorItem) {
		defer wg.Done()
		res, lineage, err := b.do(context.Background(), items)
		if err != nil || lineage != "l" || len(res) != len(items) {
			t.Errorf("do: %d results, %q, %v", len(res), lineage, err)
			return
		}
		for i := range items {
			if res[i].Resource != items[i].Resource || res[i].Anchored.Fence != items[i].Next.Fence {
				t.Errorf("result %d %+v for item %+v", i, res[i], items[i])
			}
		}
	}
	wg.Add(1)
	go check([]fencegate.AnchorItem{item("first", 1)})
	waitFor(func() bool { mu.Lock(); defer mu.Unlock(); return len(sizes) == 1 })
	// 63 single steps and one of MaxAnchorBatch-10 queue behind it.
	for i := range 63 {
		wg.Add(1)
		go check([]fencegate.AnchorItem{item(fmt.Sprintf("r/%d", i), uint64(i+1))})
	}
	big := make([]fencegate.AnchorItem, fencegate.MaxAnchorBatch-10)
	for i := range big {
		big[i] = item(fmt.Sprintf("big/%d", i), uint64(i+1))
	}
	wg.Add(1)
	go check(big)
	waitFor(func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.queue) == 64 })
	close(release)
	wg.Wait()
	total := 0
	for _, n := range sizes {
		total += n
		if n > fencegate.MaxAnchorBatch {
			t.Fatalf("a call of %d items", n)
		}
	}
	if maxIn != 1 || total != 1+63+len(big) || len(sizes) < 3 || len(sizes) > 4 {
		t.Fatalf("calls %v, %d in flight at most", sizes, maxIn)
	}
	if b.busy || len(b.queue) != 0 {
		t.Fatal("the batcher did not go idle")
	}
}

// waitFor yields until cond holds (no timing: the test fails by its own
// deadline if it never does).
func waitFor(cond func() bool) {
	for !cond() {
		runtime.Gosched()
	}
}
