package anchor_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/anchor"
	"github.com/fencegate/fencegate/store/memory"
)

// 64 concurrent Begins through one wrapper against the real registry:
// every one is anchored with its own result, and never more than one
// registry call is in flight.
func TestConcurrentBegins(t *testing.T) {
	ctx := context.Background()
	tr := &trace{}
	reg := newFaulty(anchor.FromRegistry(newRegistry(t), caller), tr)
	st := wrapped(t, memory.New(memory.Options{}), reg, anchor.Options{})
	defer st.Close()
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			in := attempt(fmt.Sprintf("acct/%d", i), uint64(i+1), 1, "p")
			res, err := st.Begin(ctx, in)
			if err != nil || res.Decision != store.DecisionProceed || res.Mutation.Ref() != in.Ref() {
				t.Errorf("begin %d: %v %s", i, err, res.Decision)
			}
		})
	}
	wg.Wait()
	for i := range 64 {
		if a := anchoredOf(t, reg, fmt.Sprintf("acct/%d", i)); a.Fence != uint64(i+1) || a.Pending == nil {
			t.Fatalf("anchor %d: %+v", i, a)
		}
	}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if reg.maxIn != 1 || reg.calls > 64 {
		t.Fatalf("%d calls, %d in flight at most", reg.calls, reg.maxIn)
	}
	t.Logf("64 Begins in %d registry calls", reg.calls)
}
