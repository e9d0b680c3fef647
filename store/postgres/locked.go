package postgres

import (
	"context"
	"errors"
	"time"

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

// TxFor opens a decision on resource in tx, a transaction of the caller's
// at any isolation level, in one round trip: it sets the savepoint named
// savepoint (none when ""), locks resource's record (SELECT ... FOR
// UPDATE, held until tx ends, or until the savepoint is rolled back) and
// loads it with the receipt of key (as Tx.Load, which then answers from
// what it read). Under READ COMMITTED the lock makes every later
// statement of tx see the record as the last transaction to change it left
// it, and no other can change it before tx ends; under REPEATABLE READ or
// SERIALIZABLE a record changed since tx's snapshot fails the lock with a
// serialization failure. A record that does not exist yet cannot be
// locked: the Tx then writes it with a plain INSERT, which fails
// (ErrRecordRace, a unique violation) when another transaction created it
// meanwhile, instead of overwriting what that one decided.
//
// The Tx's writes are queued and sent together by Release (which also
// releases the savepoint); RollbackTo drops them and rolls the savepoint
// back. When TxFor fails it has rolled its savepoint back itself; on a
// later error the caller calls RollbackTo (when it set a savepoint) or
// abandons tx.
func (s *Store) TxFor(ctx context.Context, tx pgx.Tx, resource string, key *store.ReceiptKey, savepoint string) (*Tx, error) {
	t := s.TxOn(ctx, tx)
	t.savepoint, t.deferred = savepoint, true
	if err := t.open(resource, key, savepoint); err != nil {
		// The savepoint was set before the failing statement, or the
		// transaction was already aborted (then this fails too).
		_ = t.RollbackTo()
		return nil, err
	}
	return t, nil
}

// open locks resource's record and loads it with the receipt of key, in
// one round trip (after setting savepoint, unless it is ""): the lock
// statement first, so that under READ COMMITTED the load, a statement of
// its own, sees what the last transaction to change the record left
// (every receipt of the resource included). A missing record is noted
// (absent) for the plain INSERT of its first write. Tx.Load then answers
// from what open read.
func (t *Tx) open(resource string, key *store.ReceiptKey, savepoint string) error {
	b := &pgx.Batch{}
	if savepoint != "" {
		b.Queue("SAVEPOINT " + pgx.Identifier{savepoint}.Sanitize())
	}
	b.Queue(t.q.lockRecord, resource)
	if key == nil {
		b.Queue(t.q.loadNoReceipt, resource)
	} else {
		b.Queue(t.q.load, resource, fenceKey(key.Fence), fenceKey(key.Seq))
	}
	br := t.tx.SendBatch(t.ctx, b)
	err := t.readOpening(br, resource, key, savepoint != "")
	if cerr := br.Close(); err == nil && cerr != nil {
		err = dbErr("lock record", cerr)
	}
	if err == nil {
		t.lockedRes = resource
	}
	return err
}

// readOpening reads open's batch: the savepoint, the lock, the load.
func (t *Tx) readOpening(br pgx.BatchResults, resource string, key *store.ReceiptKey, savepoint bool) error {
	if savepoint {
		if _, err := br.Exec(); err != nil {
			return dbErr("savepoint", err)
		}
	}
	var one int
	switch err := br.QueryRow().Scan(&one); {
	case errors.Is(err, pgx.ErrNoRows):
		t.absent = resource
	case err != nil:
		return dbErr("lock record", err)
	}
	var recB, rcB []byte
	var now time.Time
	if err := br.QueryRow().Scan(&recB, &rcB, &now); err != nil {
		return dbErr("load", err)
	}
	t.opened = &opened{resource: resource, key: key, rec: recB, rc: rcB, now: now}
	return nil
}

// opened is what TxFor read, for the Tx's first Load.
type opened struct {
	resource string
	key      *store.ReceiptKey
	rec, rc  []byte
	now      time.Time
}

// loadOpened answers Load from what TxFor read, once, when it asks the
// same.
func (t *Tx) loadOpened(resource string, key *store.ReceiptKey) (recB, rcB []byte, now time.Time, ok bool) {
	o := t.opened
	if o == nil || o.resource != resource || (o.key == nil) != (key == nil) || (key != nil && *o.key != *key) {
		return nil, nil, time.Time{}, false
	}
	t.opened = nil
	return o.rec, o.rc, o.now, true
}

// putNewRecord writes the record TxFor found absent, failing on a
// concurrent creation rather than overwriting it.
func (t *Tx) putNewRecord(r store.Record) error {
	t.absent = ""
	args := []any{r.Resource, r.InFlight != nil, r.Pause != nil, codec.EncodeRecord(nil, r)}
	if t.deferred {
		return t.exec("insert record", t.q.insertRecord, args...)
	}
	t.wrote = true
	if _, err := t.tx.Exec(t.ctx, t.q.insertRecord, args...); err != nil {
		return writeErr("insert record", err)
	}
	return nil
}

// queued is a write a TxFor's Tx holds until Release.
type queued struct {
	what, sql string
	args      []any
}

// flush sends the queued writes (and then, if given, one more statement)
// in one round trip.
func (t *Tx) flush(last string) error {
	if len(t.pending) == 0 && last == "" {
		return nil
	}
	pending := t.pending
	t.pending = nil
	_, err := sendQueued(t.ctx, t.tx, pending, last)
	return err
}

// batchSender is what sendQueued sends on: a pgx.Tx, a pool connection.
type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// sendQueued sends the queued writes and then, if given, one more
// statement (RELEASE SAVEPOINT, COMMIT) in one round trip, and returns
// that statement's tag. A failed write ends it there (PostgreSQL runs
// nothing after it in the batch).
func sendQueued(ctx context.Context, on batchSender, pending []queued, last string) (pgconn.CommandTag, error) {
	b := &pgx.Batch{}
	for _, q := range pending {
		b.Queue(q.sql, q.args...)
	}
	if last != "" {
		b.Queue(last)
	}
	br := on.SendBatch(ctx, b)
	defer br.Close()
	for _, q := range pending {
		if _, err := br.Exec(); err != nil {
			return pgconn.CommandTag{}, writeErr(q.what, err)
		}
	}
	var tag pgconn.CommandTag
	if last != "" {
		var err error
		if tag, err = br.Exec(); err != nil {
			return tag, dbErr(last, err)
		}
	}
	return tag, dbErr("write", br.Close())
}

// writeErr is the error of a queued write: a unique violation of the
// record's insert is ErrRecordRace.
func writeErr(what string, err error) error {
	var pe *pgconn.PgError
	if what == "insert record" && errors.As(err, &pe) && pe.Code == "23505" {
		return &dbError{what: what, err: errors.Join(ErrRecordRace, err)}
	}
	return dbErr(what, err)
}

// Release sends the Tx's queued writes and releases its savepoint, in one
// round trip: what it wrote is the caller's transaction's from now on,
// and the record's lock stays with it.
func (t *Tx) Release() error {
	last := ""
	if t.savepoint != "" {
		last = "RELEASE SAVEPOINT " + pgx.Identifier{t.savepoint}.Sanitize()
	}
	return t.flush(last)
}

// RollbackTo drops the Tx's queued writes and rolls its savepoint back
// (and releases it), which undoes whatever it wrote and releases the
// record's lock: the caller's transaction is as it was before TxFor, even
// after an error of PostgreSQL's.
func (t *Tx) RollbackTo() error {
	t.pending = nil
	if t.savepoint == "" {
		return nil
	}
	sp := pgx.Identifier{t.savepoint}.Sanitize()
	b := &pgx.Batch{}
	b.Queue("ROLLBACK TO SAVEPOINT " + sp)
	b.Queue("RELEASE SAVEPOINT " + sp)
	return dbErr("rollback to savepoint", t.tx.SendBatch(t.ctx, b).Close())
}
