package anchor_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/anchor"
	"github.com/fencegate/fencegate/store/bolt"
	"github.com/fencegate/fencegate/store/memory"
	"github.com/fencegate/fencegate/store/storetest"
)

// BenchmarkBeginCommit is a forwarded mutation's store work through the
// wrapper (Begin, anchored at an in-process registry on its memory
// backend, then Commit), by store and by concurrent callers (each on its
// own resource, segment after segment). Concurrent anchor steps share
// registry calls; steps/call is the mean batch.
func BenchmarkBeginCommit(b *testing.B) {
	for _, kind := range []string{"memory", "bolt"} {
		for _, workers := range []int{1, 64} {
			b.Run(fmt.Sprintf("%s/workers=%d", kind, workers), func(b *testing.B) {
				var inner store.Store
				if kind == "memory" {
					inner = memory.New(memory.Options{})
				} else {
					st, err := bolt.Open(filepath.Join(b.TempDir(), "store.db"), bolt.Options{})
					if err != nil {
						b.Fatal(err)
					}
					inner = st
				}
				tr := &trace{}
				reg := newFaulty(anchor.FromRegistry(newRegistry(b), caller), tr)
				st := wrapped(b, inner, reg, anchor.Options{})
				defer st.Close()
				ctx := context.Background()
				var next atomic.Int64
				b.ResetTimer()
				var wg sync.WaitGroup
				for w := range workers {
					wg.Go(func() {
						resource := fmt.Sprintf("bench/%d", w)
						for seq := uint64(1); next.Add(1) <= int64(b.N); seq++ {
							in := storetest.Attempt(resource, 1, seq, "p")
							in.Now = time.Now()
							in.Deadline = in.Now.Add(time.Minute)
							in.QuietAt = in.Now.Add(2 * time.Minute)
							res, err := st.Begin(ctx, in)
							if err != nil || res.Decision != store.DecisionProceed {
								b.Errorf("begin: %v %s", err, res.Decision)
								return
							}
							c := storetest.Answer(in.Ref())
							c.Now = in.Now
							if _, err := st.Commit(ctx, c); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				reg.mu.Lock()
				b.ReportMetric(float64(b.N)/float64(max(reg.calls, 1)), "steps/call")
				reg.mu.Unlock()
				tr.take()
			})
		}
	}
}
