package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/fencegate/fencegate/store"
)

// In returns a store.Store whose every call runs inside tx, a transaction
// the caller began on the store's database (at SERIALIZABLE) and commits
// or rolls back: library mode's acceptance point. Its Begin, Commit, ...
// are the very operations of the store (store.NewTxBackend: validate,
// load, decide at the transaction's time, write the Change), so a
// service's own writes in tx commit or roll back with the fence's record
// and receipt. Each call first checks the generation marker in tx as
// Update does. A call is not retried (the transaction is the caller's):
// an error that IsRetryable says so (a serialization failure, a deadlock)
// means the caller runs its whole transaction again, and any error of
// PostgreSQL has aborted tx (PostgreSQL's rule), so the caller rolls it
// back. A decision's error (store.ErrNotInFlight, ...) writes nothing.
// Close does nothing: tx and the Store stay the caller's.
func (s *Store) In(tx pgx.Tx) store.Store {
	return store.NewTxBackend(&inTx{s: s, tx: tx}, store.TxOptions{MaxResponseBody: s.maxBody})
}

// IsRetryable reports whether err is PostgreSQL's serialization failure
// (40001), a deadlock (40P01) or ErrRecordRace: the transaction was
// rolled back and runs again.
func IsRetryable(err error) bool { return retryable(err) }

// TxOptions are the options the store's operations decide with (its
// response body limit), for a caller deciding through TxOn or TxFor.
func (s *Store) TxOptions() store.TxOptions { return store.TxOptions{MaxResponseBody: s.maxBody} }

// inTx is the store.TxStore of In: every transaction is the caller's tx.
type inTx struct {
	s  *Store
	tx pgx.Tx
}

func (b *inTx) Update(ctx context.Context, op string, fn func(store.Tx) error) error {
	if err := b.s.enter(ctx); err != nil {
		return err
	}
	if err := b.s.checkIn(ctx, b.tx); err != nil {
		return b.s.wrap(op, err)
	}
	err := fn(b.s.TxOn(ctx, b.tx))
	if err != nil && isPostgres(err) {
		return wrap(op, err)
	}
	return err
}

func (b *inTx) View(ctx context.Context, fn func(store.Tx) error) error {
	return b.Update(ctx, "view", fn)
}

// Generation reads the marker in tx (store.Store.Generation's rules: one
// is written when missing).
func (b *inTx) Generation(ctx context.Context) (string, error) {
	return b.s.generationOn(ctx, b.tx)
}

func (b *inTx) Close() error { return nil }
