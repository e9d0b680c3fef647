package pgfence_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegate/fencegate"
)

// BenchmarkTransaction is library mode's cost: the same business
// transaction (one UPDATE of one row, READ COMMITTED) without the fence
// and with it (Apply on a fresh segment of one owner each time), over the
// loopback PostgreSQL. It reports p50 and p99 per transaction; the
// difference of the two sub-benchmarks is the fence's added latency
// (target: at most 0.3 ms p50, 1 ms p99).
func BenchmarkTransaction(b *testing.B) {
	for _, fenced := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "fenced"}[fenced]
		b.Run(name, func(b *testing.B) {
			w := newWorld(b)
			ctx := context.Background()
			o := w.lease(5)
			if _, err := w.pool.Exec(ctx, `INSERT INTO invoices (batch, total) VALUES ('7', 0)`); err != nil {
				b.Fatal(err)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				if i%1000 == 0 {
					o = w.refresh(o) // proofs live 5 s
				}
				start := time.Now()
				err := pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
					if fenced {
						if _, err := w.fence.Apply(ctx, tx, o.request(uint64(i+1), fmt.Sprint(i))); err != nil {
							return err
						}
					}
					_, err := tx.Exec(ctx, `UPDATE invoices SET total = $1 WHERE batch = '7'`, i)
					return err
				})
				lat = append(lat, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}

var _ = fencegate.HeaderGrant
