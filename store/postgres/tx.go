package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/codec"
)

// querier is what a Tx runs its statements on: a pgx.Tx (or, for reads
// outside one, the pool).
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Tx is a store.Tx over one PostgreSQL transaction. Its reads and writes
// are statements on that transaction; it keeps nothing of its own but the
// time it read, and whether it wrote.
type Tx struct {
	ctx         context.Context
	tx          querier
	q           *queries
	schema      string
	callerClock bool
	now         time.Time
	wrote       bool
	// counted is the receipt count PutReceipt's statement returned for a
	// resource, until a deletion: TrimReceipts then needs no read.
	counted map[string]int
	// absent is the resource whose record TxFor found missing: its first
	// write inserts (putNewRecord).
	absent string
	// A Tx of TxFor: its savepoint, what it read, and its writes, queued
	// until Release (deferred).
	savepoint string
	opened    *opened
	deferred  bool
	pending   []queued
}

var _ store.Tx = (*Tx)(nil)

// TxOn returns the store's store.Tx over tx, a transaction the caller
// began (and commits or rolls back) on the store's database: library mode
// decides with the store's pure functions (store.Decide, ...) and writes
// their Change through it, in the same transaction as the service's own
// writes. tx must run at SERIALIZABLE (as Update's do), or the caller
// must hold the resource's row lock (SELECT ... FOR UPDATE on its records
// row, or an advisory lock) for as long as the transaction decides: the
// store's rules assume no other transaction changes what it read before
// it commits. The generation marker is not checked on it (CheckIn does).
func (s *Store) TxOn(ctx context.Context, tx pgx.Tx) *Tx {
	return &Tx{ctx: ctx, tx: tx, q: &s.q, schema: s.schema, callerClock: s.callerClock}
}

// CheckIn reads the generation marker in tx and checks it as every
// transaction of Update does (ErrGenerationChanged on a loss).
func (s *Store) CheckIn(ctx context.Context, tx pgx.Tx) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	return s.checkIn(ctx, tx)
}

// Wrote reports whether the transaction wrote through t.
func (t *Tx) Wrote() bool { return t.wrote }

// fenceKey maps a uint64 to the bigint of the same order (v - 2^63).
func fenceKey(v uint64) int64 { return int64(v ^ 1<<63) }

// fenceOf is fenceKey's inverse.
func fenceOf(k int64) uint64 { return uint64(k) ^ 1<<63 }

func (t *Tx) exec(what, sql string, args ...any) error {
	t.wrote = true
	if t.deferred {
		t.pending = append(t.pending, queued{what: what, sql: sql, args: args})
		return nil
	}
	_, err := t.tx.Exec(t.ctx, sql, args...)
	return dbErr(what, err)
}

// Load reads the record, the receipt of key and the server's clock in one
// statement.
func (t *Tx) Load(resource string, key *store.ReceiptKey) (store.Record, *store.Receipt, error) {
	var recB, rcB []byte
	var now time.Time
	var err error
	if b1, b2, n, ok := t.loadOpened(resource, key); ok {
		recB, rcB, now = b1, b2, n
	} else if key == nil {
		err = t.tx.QueryRow(t.ctx, t.q.loadNoReceipt, resource).Scan(&recB, &rcB, &now)
	} else {
		err = t.tx.QueryRow(t.ctx, t.q.load, resource, fenceKey(key.Fence), fenceKey(key.Seq)).Scan(&recB, &rcB, &now)
	}
	if err != nil {
		return store.Record{}, nil, dbErr("load", err)
	}
	t.now = now
	rec, err := decodeRecord(resource, recB)
	if err != nil || rcB == nil {
		return rec, nil, err
	}
	rc, err := decodeReceipt(*key, rcB)
	if err != nil {
		return store.Record{}, nil, err
	}
	return rec, &rc, nil
}

// Now is the server's clock_timestamp() read with the transaction's Load
// (or read now when it has none), or zero with Options.CallerClock.
func (t *Tx) Now() (time.Time, error) {
	if t.callerClock {
		return time.Time{}, nil
	}
	if t.now.IsZero() {
		if err := t.tx.QueryRow(t.ctx, t.q.now).Scan(&t.now); err != nil {
			return time.Time{}, dbErr("read time", err)
		}
	}
	return t.now, nil
}

func decodeRecord(resource string, b []byte) (store.Record, error) {
	if b == nil {
		return store.Record{}, nil
	}
	rec, err := codec.DecodeRecord(b)
	if err != nil {
		return store.Record{}, fmt.Errorf("store/postgres: record %q: %w", resource, err)
	}
	if rec.Resource != resource {
		return store.Record{}, fmt.Errorf("store/postgres: record under %q names %q: %w", resource, rec.Resource, store.ErrCorrupt)
	}
	return rec, nil
}

func decodeReceipt(k store.ReceiptKey, b []byte) (store.Receipt, error) {
	rc, err := codec.DecodeReceipt(b)
	if err != nil {
		return store.Receipt{}, fmt.Errorf("store/postgres: receipt %v: %w", k, err)
	}
	if rc.Key() != k {
		return store.Receipt{}, fmt.Errorf("store/postgres: receipt under %v names %v: %w", k, rc.Key(), store.ErrCorrupt)
	}
	return rc, nil
}

func (t *Tx) PutRecord(r store.Record) error {
	if t.absent != "" && r.Resource == t.absent {
		return t.putNewRecord(r)
	}
	return t.exec("put record", t.q.putRecord, r.Resource, r.InFlight != nil, r.Pause != nil, codec.EncodeRecord(nil, r))
}

// PutReceipt stores the receipt and, when it is a new one, counts it in;
// the count the statement returns is kept for TrimReceipts.
func (t *Tx) PutReceipt(r store.Receipt) error {
	t.wrote = true
	delete(t.counted, r.Resource)
	if t.deferred {
		return t.exec("put receipt", t.q.putReceipt, r.Resource, fenceKey(r.Fence), fenceKey(r.Seq), r.OperationID, codec.EncodeReceipt(nil, r))
	}
	var n int64
	err := t.tx.QueryRow(t.ctx, t.q.putReceipt, r.Resource, fenceKey(r.Fence), fenceKey(r.Seq), r.OperationID, codec.EncodeReceipt(nil, r)).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // a receipt replaced: the count is unchanged
	}
	if err != nil {
		return dbErr("put receipt", err)
	}
	if t.counted == nil {
		t.counted = map[string]int{}
	}
	t.counted[r.Resource] = int(n)
	return nil
}

// getJSON reads one JSON value into v; false when there is no row.
func (t *Tx) getJSON(what, sql string, v any, args ...any) (bool, error) {
	var b []byte
	err := t.tx.QueryRow(t.ctx, sql, args...).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, dbErr(what, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("store/postgres: decode %s: %v: %w", what, err, store.ErrCorrupt)
	}
	return true, nil
}

// listJSON reads a column of JSON values.
func listJSON[T any](t *Tx, what, sql string, args ...any) ([]T, error) {
	rows, err := t.tx.Query(t.ctx, sql, args...)
	if err != nil {
		return nil, dbErr(what, err)
	}
	var out []T
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			rows.Close()
			return nil, dbErr(what, err)
		}
		var v T
		if err := json.Unmarshal(b, &v); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store/postgres: decode %s: %v: %w", what, err, store.ErrCorrupt)
		}
		out = append(out, v)
	}
	return out, dbErr(what, rows.Err())
}

func (t *Tx) Quarantine(resource, id string) (*store.Quarantine, error) {
	var q store.Quarantine
	ok, err := t.getJSON("quarantine", t.q.quarantine, &q, resource, id)
	if err != nil || !ok {
		return nil, err
	}
	return &q, nil
}

func (t *Tx) PutQuarantine(q store.Quarantine) error {
	b, err := json.Marshal(q)
	if err != nil {
		return fmt.Errorf("store/postgres: encode quarantine: %w", err)
	}
	return t.exec("put quarantine", t.q.putQuarantine, q.Resource, q.ID, b)
}

func (t *Tx) Enforcement(shape string) (*store.Enforcement, error) {
	var e store.Enforcement
	ok, err := t.getJSON("enforcement", t.q.enforcement, &e, shape)
	if err != nil || !ok {
		return nil, err
	}
	return &e, nil
}

func (t *Tx) PutEnforcement(e store.Enforcement) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("store/postgres: encode enforcement: %w", err)
	}
	return t.exec("put enforcement", t.q.putEnforcement, e.Shape, b)
}

func (t *Tx) Enforcements() ([]store.Enforcement, error) {
	return listJSON[store.Enforcement](t, "enforcements", t.q.enforcements)
}

func (t *Tx) TrustedKeys() ([]store.TrustedKey, error) {
	return listJSON[store.TrustedKey](t, "trust", t.q.trust)
}

// PutTrustedKeys replaces the table's rows.
func (t *Tx) PutTrustedKeys(pins []store.TrustedKey) error {
	if err := t.exec("clear trust", t.q.clearTrust); err != nil {
		return err
	}
	if len(pins) == 0 {
		return nil
	}
	kids := make([]string, len(pins))
	bodies := make([]string, len(pins))
	for i, p := range pins {
		b, err := json.Marshal(p)
		if err != nil {
			return fmt.Errorf("store/postgres: encode trust pin: %w", err)
		}
		kids[i], bodies[i] = p.Kid, string(b)
	}
	return t.exec("put trust", t.q.putTrust, kids, bodies)
}

func (t *Tx) Receipts(keys []store.ReceiptKey) ([]*store.Receipt, error) {
	out := make([]*store.Receipt, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	res := make([]string, len(keys))
	fences := make([]int64, len(keys))
	seqs := make([]int64, len(keys))
	for i, k := range keys {
		res[i], fences[i], seqs[i] = k.Resource, fenceKey(k.Fence), fenceKey(k.Seq)
	}
	rows, err := t.tx.Query(t.ctx, t.q.receipts, res, fences, seqs)
	if err != nil {
		return nil, dbErr("receipts", err)
	}
	defer rows.Close()
	for rows.Next() {
		var i int64
		var b []byte
		if err := rows.Scan(&i, &b); err != nil {
			return nil, dbErr("receipts", err)
		}
		if i < 1 || int(i) > len(keys) {
			return nil, fmt.Errorf("store/postgres: receipts: ordinal %d of %d", i, len(keys))
		}
		rc, err := decodeReceipt(keys[i-1], b)
		if err != nil {
			return nil, err
		}
		out[i-1] = &rc
	}
	return out, dbErr("receipts", rows.Err())
}

func (t *Tx) OperationFences(resource, operationID string) ([]uint64, error) {
	rows, err := t.tx.Query(t.ctx, t.q.operationFences, resource, operationID)
	if err != nil {
		return nil, dbErr("operation fences", err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, dbErr("operation fences", err)
	}
	out := make([]uint64, len(keys))
	for i, k := range keys {
		out[i] = fenceOf(k)
	}
	return out, nil
}

// records reads a column of records.
func (t *Tx) records(what, sql string, args ...any) ([]store.Record, error) {
	rows, err := t.tx.Query(t.ctx, sql, args...)
	if err != nil {
		return nil, dbErr(what, err)
	}
	bodies, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, dbErr(what, err)
	}
	out := make([]store.Record, len(bodies))
	for i, b := range bodies {
		rec, err := codec.DecodeRecord(b)
		if err != nil {
			return nil, fmt.Errorf("store/postgres: %s: %w", what, err)
		}
		out[i] = rec
	}
	return out, nil
}

// Indexed reads the records whose flag the index names, by resource; a
// record flagged without its marker (pause) is store.ErrCorrupt.
func (t *Tx) Indexed(index store.Index) ([]store.Record, error) {
	sql := t.q.inFlight
	if index == store.IndexPaused {
		sql = t.q.paused
	}
	recs, err := t.records("indexed", sql)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if index == store.IndexInFlight && r.InFlight == nil || index == store.IndexPaused && r.Pause == nil {
			return nil, fmt.Errorf("store/postgres: record %q is flagged without its marker: %w", r.Resource, store.ErrCorrupt)
		}
	}
	return recs, nil
}

func (t *Tx) RecordsAfter(after string, limit int) ([]store.Record, error) {
	return t.records("records", t.q.recordsAfter, after, limit)
}

func (t *Tx) Quarantined(resource string) ([]store.Quarantine, error) {
	if resource == "" {
		return listJSON[store.Quarantine](t, "quarantined", t.q.quarantinedAll)
	}
	return listJSON[store.Quarantine](t, "quarantined", t.q.quarantined, resource)
}

// CompactResources lists the resources with receipts (the counts table)
// or quarantine entries, in byte order.
func (t *Tx) CompactResources() ([]string, error) {
	rows, err := t.tx.Query(t.ctx, t.q.compactResources)
	if err != nil {
		return nil, dbErr("compact resources", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return out, dbErr("compact resources", err)
}

// count reads the number of resource's receipts.
func (t *Tx) count(resource string) (int, error) {
	var n int64
	if err := t.tx.QueryRow(t.ctx, t.q.count, resource).Scan(&n); err != nil {
		return 0, dbErr("count", err)
	}
	return int(n), nil
}

func (t *Tx) CompactSnapshot(resource string) (store.CompactSnapshot, error) {
	rec, _, err := t.Load(resource, nil)
	if err != nil {
		return store.CompactSnapshot{}, err
	}
	n, err := t.count(resource)
	if err != nil {
		return store.CompactSnapshot{}, err
	}
	qs, err := t.Quarantined(resource)
	if err != nil {
		return store.CompactSnapshot{}, err
	}
	return store.CompactSnapshot{Record: rec, Receipts: n, Quarantine: qs}, nil
}

// stampPage is how many receipts Stamps reads per statement.
const stampPage = 256

// Stamps reads resource's receipts in (fence, seq) order a page at a
// time, so that the caller may write between pages (a connection runs
// one statement at a time).
func (t *Tx) Stamps(resource string) iter.Seq2[store.ReceiptStamp, error] {
	return store.PagedStamps(stampPage, func(_ int, last *store.ReceiptKey) ([]store.ReceiptStamp, error) {
		return t.stampPage(resource, last)
	})
}

// stampPage reads the receipts after the key after, or from the first
// when after is nil.
func (t *Tx) stampPage(resource string, after *store.ReceiptKey) ([]store.ReceiptStamp, error) {
	sql, args := t.q.stampsFirst, []any{resource, stampPage}
	if after != nil {
		sql, args = t.q.stamps, []any{resource, fenceKey(after.Fence), fenceKey(after.Seq), stampPage}
	}
	rows, err := t.tx.Query(t.ctx, sql, args...)
	if err != nil {
		return nil, dbErr("stamps", err)
	}
	defer rows.Close()
	var out []store.ReceiptStamp
	for rows.Next() {
		var fk, sk int64
		var b []byte
		if err := rows.Scan(&fk, &sk, &b); err != nil {
			return nil, dbErr("stamps", err)
		}
		st, err := codec.DecodeStamp(b)
		key := store.ReceiptKey{Resource: resource, Fence: fenceOf(fk), Seq: fenceOf(sk)}
		if err != nil {
			return nil, fmt.Errorf("store/postgres: receipt %v: %w", key, err)
		}
		if st.Key != key {
			return nil, fmt.Errorf("store/postgres: receipt under %v names %v: %w", key, st.Key, store.ErrCorrupt)
		}
		out = append(out, st)
	}
	return out, dbErr("stamps", rows.Err())
}

func (t *Tx) DeleteReceipt(st store.ReceiptStamp) error {
	delete(t.counted, st.Key.Resource)
	return t.exec("delete receipt", t.q.deleteReceipt, st.Key.Resource, fenceKey(st.Key.Fence), fenceKey(st.Key.Seq))
}

func (t *Tx) DeleteQuarantine(resource string, ids []string) error {
	return t.exec("delete quarantine", t.q.deleteQuarantine, resource, ids)
}

// TrimReceipts of store.Tx: store.TrimOldest with the stored count (as
// the receipt just written returned it, or read).
func (t *Tx) TrimReceipts(rec store.Record, keep int) (int, error) {
	if t.deferred { // the count is the queued writes' result: send them
		if err := t.flush(""); err != nil {
			return 0, err
		}
		t.deferred = false
		defer func() { t.deferred = true }()
	}
	n, ok := t.counted[rec.Resource]
	if !ok {
		var err error
		if n, err = t.count(rec.Resource); err != nil {
			return 0, err
		}
	}
	return store.TrimOldest(t, rec, n, keep)
}

// Stats reads the store's size: Bytes is the size of its tables with
// their indexes and TOAST (pg_total_relation_size).
func (t *Tx) Stats() (store.Stats, error) {
	var recs, receipts, quarantined, bytes int64
	if err := t.tx.QueryRow(t.ctx, t.q.stats, t.schema).Scan(&recs, &receipts, &quarantined, &bytes); err != nil {
		return store.Stats{}, dbErr("stats", err)
	}
	return store.Stats{Resources: int(recs), Receipts: int(receipts), Quarantined: int(quarantined), Bytes: bytes}, nil
}
