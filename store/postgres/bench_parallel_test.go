package postgres

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegate/fencegate/internal/pgtest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

// BenchmarkBeginCommitParallel is Begin+Commit from 16 concurrent callers,
// each on a resource of its own (as the sidecar's workers are): the
// writes never touch the same rows, so every serialization failure is a
// false positive of the predicate locks. It reports the transactions run
// again per accepted write (retries/op).
func BenchmarkBeginCommitParallel(b *testing.B) {
	dsn := pgtest.Database(b) + os.Getenv("PGBENCH_DSN_SUFFIX")
	ctx := context.Background()
	conns, _ := strconv.Atoi(os.Getenv("PGBENCH_CONNS"))
	s, err := Open(ctx, Options{DSN: dsn, Schema: "bench", MaxConns: int32(conns)})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var worker atomic.Int64
	b.SetParallelism(8) // 16 callers on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		id := worker.Add(1)
		res := "bench/" + strconv.FormatInt(id, 10)
		for seq := uint64(1); pb.Next(); seq++ {
			in := storetest.Attempt(res, 1, seq, fmt.Sprint(seq))
			now := time.Now()
			in.Now, in.Deadline, in.QuietAt = now, now.Add(time.Minute), now.Add(2*time.Minute)
			r, err := s.Begin(ctx, in)
			if err != nil || r.Decision != store.DecisionProceed {
				b.Errorf("Begin: %s %v", r.Decision, err)
				return
			}
			if _, err := s.Commit(ctx, storetest.Answer(in.Ref())); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(s.Retried())/float64(b.N), "retries/op")
}
