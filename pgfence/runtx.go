package pgfence

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencegate/fencegate/store/postgres"
)

// DefaultAttempts is how many times RunTx runs a transaction that keeps
// failing with a retryable error.
const DefaultAttempts = 8

// Beginner begins transactions: a *pgxpool.Pool, a *pgx.Conn.
type Beginner interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// RunTx runs fn in a transaction of db begun with opts, commits it when
// fn returns nil and rolls it back otherwise, and runs it again (up to
// DefaultAttempts, with a short random backoff) when it failed with an
// error postgres.IsRetryable reports: a serialization failure, a
// deadlock, a resource's record created concurrently. fn must be safe to
// run more than once; everything it wrote in a failed run was rolled
// back. It returns fn's error (or the commit's) of the last run.
func (f *Fence) RunTx(ctx context.Context, db Beginner, opts pgx.TxOptions, fn func(pgx.Tx) error) error {
	var err error
	for attempt := range DefaultAttempts {
		if attempt > 0 {
			if werr := f.pause(ctx, attempt); werr != nil {
				return err
			}
		}
		err = runOnce(ctx, db, opts, fn)
		if err == nil || !postgres.IsRetryable(err) {
			return err
		}
	}
	return err
}

func runOnce(ctx context.Context, db Beginner, opts pgx.TxOptions, fn func(pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, db, opts, fn)
}

// pause waits a random time growing with attempt (at most 50 ms).
func (f *Fence) pause(ctx context.Context, attempt int) error {
	d := time.Duration(rand.Int64N(int64(min(time.Millisecond<<attempt, 50*time.Millisecond)) + 1))
	t := f.o.clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}
