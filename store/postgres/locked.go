package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/codec"
)

// ErrRecordRace is returned by a Tx of TxFor whose resource's record was
// created by another transaction after it looked: the caller's
// transaction is aborted (a unique violation) and runs again, as after a
// serialization failure (IsRetryable).
var ErrRecordRace = errors.New("store/postgres: the resource's record was created concurrently")

// TxFor locks resource's record in tx (SELECT ... FOR UPDATE, held until
// tx ends) and returns the store.Tx over tx for deciding on resource at
// any isolation level: under READ COMMITTED the lock makes every later
// statement of tx see the record as the last transaction to change it
// left it, and no other can change it before tx ends; under REPEATABLE
// READ or SERIALIZABLE a record changed since tx's snapshot fails the
// lock with a serialization failure. A record that does not exist yet
// cannot be locked: the Tx then writes it with a plain INSERT, which
// fails (ErrRecordRace, a unique violation) when another transaction
// created it meanwhile, instead of overwriting what that one decided.
func (s *Store) TxFor(ctx context.Context, tx pgx.Tx, resource string) (*Tx, error) {
	t := s.TxOn(ctx, tx)
	var one int
	err := tx.QueryRow(ctx, s.q.lockRecord, resource).Scan(&one)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		t.absent = resource
	case err != nil:
		return nil, dbErr("lock record", err)
	}
	return t, nil
}

// putNewRecord writes the record TxFor found absent, failing on a
// concurrent creation rather than overwriting it.
func (t *Tx) putNewRecord(r store.Record) error {
	t.wrote = true
	_, err := t.tx.Exec(t.ctx, t.q.insertRecord, r.Resource, r.InFlight != nil, r.Pause != nil, codec.EncodeRecord(nil, r))
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return &dbError{what: "insert record", err: errors.Join(ErrRecordRace, err)}
	}
	if err == nil {
		t.absent = ""
	}
	return dbErr("insert record", err)
}
