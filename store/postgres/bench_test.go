package postgres

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/fencegate/fencegate/internal/pgtest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/storetest"
)

// BenchmarkBeginCommit: one accepted write (Begin, then Commit) per
// iteration on the machine's PostgreSQL, as a sidecar runs it: the
// server's clock, the generation marker checked in every transaction.
func BenchmarkBeginCommit(b *testing.B) {
	dsn := pgtest.Database(b)
	ctx := context.Background()
	s0, err := Open(ctx, Options{DSN: dsn, Schema: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	gen, err := s0.Generation(ctx)
	_ = s0.Close()
	if err != nil {
		b.Fatal(err)
	}
	s, err := Open(ctx, Options{DSN: dsn, Schema: "bench", ExpectedGeneration: gen})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ResetTimer()
	for i := range b.N {
		in := storetest.Attempt("bench/"+strconv.Itoa(i%64), 1, uint64(i/64)+1, "p")
		now := time.Now()
		in.Now, in.Deadline, in.QuietAt = now, now.Add(time.Minute), now.Add(2*time.Minute)
		res, err := s.Begin(ctx, in)
		if err != nil || res.Decision != store.DecisionProceed {
			b.Fatalf("Begin: %s %v", res.Decision, err)
		}
		if _, err := s.Commit(ctx, storetest.Answer(in.Ref())); err != nil {
			b.Fatal(err)
		}
	}
}
