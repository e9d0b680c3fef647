package main

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// roundTrips is a pgx tracer counting the library connection's round
// trips to PostgreSQL: each Query, QueryRow or Exec (BEGIN, a savepoint
// and COMMIT included) and each SendBatch counts one. On loopback the
// round trips, not the bytes, are most of a short transaction's time, so
// the library phase reports how many the fence call adds. Statements a
// connection prepares on first use are not counted; the warm-up has
// prepared them by the time the measured transactions run.
type roundTrips struct{ n int }

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.n++
	return ctx
}

func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.n++
	return ctx
}

func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
