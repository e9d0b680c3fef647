// Package invoices is the library-mode example of docs/sdk.md: a service
// that keeps its invoices in PostgreSQL fences each write inside its own
// transaction.
package invoices

import (
	"context"
	"errors"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencegate/fencegate/pgfence"
	"github.com/fencegate/fencegate/store/postgres"
)

// Open builds the fence over the service's own database: its tables live
// in the schema "fencegate" (created, or migrated, here), the keys grants
// are verified with in the trust bundle file the platform team mounts.
func Open(ctx context.Context, pool *pgxpool.Pool, trustBundle string) (*pgfence.Fence, error) {
	st, err := postgres.New(ctx, pool, postgres.Options{})
	if err != nil {
		return nil, err
	}
	return pgfence.New(ctx, st, pgfence.WithTrustBundle(trustBundle))
}

// SetTotal is one fenced write of a batch's total. grant and proof are
// the request's Fence-Grant and Fence-Status headers, caller the SPIFFE ID
// of its mTLS certificate. The fence's record and receipt and the UPDATE
// commit together or not at all; a refusal is a *fencegate.Problem
// (STALE_OWNER, ...) to answer as it is.
func SetTotal(ctx context.Context, pool *pgxpool.Pool, fence *pgfence.Fence,
	caller, grant, proof, batch string, total int64) error {
	req := pgfence.Request{
		Resource: "invoice-batch/" + batch,
		Caller:   caller,
		Grant:    grant,
		Status:   proof,
		Payload:  []byte(strconv.FormatInt(total, 10)),
	}
	err := fence.RunTx(ctx, pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if _, err := fence.Apply(ctx, tx, req); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "UPDATE invoices SET total = $1 WHERE batch = $2", total, batch)
		return err
	})
	if errors.Is(err, pgfence.ErrReplayed) {
		return nil // a retry of a write that committed: applied once
	}
	return err
}
