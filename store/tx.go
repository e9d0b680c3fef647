package store

import (
	"context"
	"iter"
	"time"
)

// Tx is one transaction of a backend's storage. NewTxBackend turns a
// TxStore of them into a Store whose every operation is one transaction:
// load the decision's snapshot, call the pure decision function (Decide,
// DecideCommit, ..., PlanCompaction) and write the Change it returns. A
// backend implements its Tx over its own storage (a bbolt transaction; a
// WATCH and a MULTI on Redis; maps under a mutex) and its own codec, and
// keeps its indexes in step in the Put and Delete methods.
//
// Reads that belong together are one method (Load, CompactSnapshot), so a
// backend can make them one round trip. A value read may share memory with
// the backend's state until the transaction ends: the caller never
// modifies one and copies what it keeps.
type Tx interface {
	// Load reads a resource's record (the zero Record when none) and, when
	// key is set, the receipt of key (nil when none), as one snapshot.
	Load(resource string, key *ReceiptKey) (Record, *Receipt, error)
	// Now is the time the transaction decides at: the backend's own clock,
	// read with the transaction's first read (store/redis: its estimate
	// of the server's TIME, which its step script checks within bounds
	// before it writes), or zero to decide at the caller's Now (see
	// tx_time.go).
	Now() (time.Time, error)
	// PutRecord stores a record, keeping the indexes Indexed reads.
	PutRecord(Record) error
	// PutReceipt stores a receipt, indexed by operation ID (OperationFences)
	// and for compaction (Stamps).
	PutReceipt(Receipt) error
	// Quarantine reads a quarantine entry of resource (nil when none).
	Quarantine(resource, id string) (*Quarantine, error)
	// PutQuarantine stores a quarantine entry, replacing one of its ID.
	PutQuarantine(Quarantine) error

	// Enforcement reads the ledger entry of a shape (nil when none).
	Enforcement(shape string) (*Enforcement, error)
	// PutEnforcement stores a ledger entry.
	PutEnforcement(Enforcement) error
	// Enforcements reads the whole ledger, in any order.
	Enforcements() ([]Enforcement, error)
	// TrustedKeys reads the trust pins, in any order.
	TrustedKeys() ([]TrustedKey, error)
	// PutTrustedKeys replaces the whole pin set.
	PutTrustedKeys([]TrustedKey) error

	// Receipts reads receipts by key (nil for those absent), together.
	Receipts(keys []ReceiptKey) ([]*Receipt, error)
	// OperationFences lists the fences under which a receipt of operation
	// ID operationID of resource is indexed, in any order.
	OperationFences(resource, operationID string) ([]uint64, error)
	// Indexed reads the records of the resources in index, by resource. A
	// backend whose index and records are not read as one snapshot may
	// return records that have left the index since (the caller filters).
	Indexed(index Index) ([]Record, error)
	// RecordsAfter reads up to limit records whose resource is after after
	// ("" from the first), in resource (byte) order.
	RecordsAfter(after string, limit int) ([]Record, error)
	// Quarantined reads the quarantine entries of resource, or of every
	// resource when resource is "", in any order.
	Quarantined(resource string) ([]Quarantine, error)

	// CompactResources lists, in resource order, every resource that may
	// hold receipts or quarantine entries (a superset is fine).
	CompactResources() ([]string, error)
	// CompactSnapshot reads what PlanCompaction decides on for resource:
	// its record, its number of receipts and its quarantine entries.
	CompactSnapshot(resource string) (CompactSnapshot, error)
	// Stamps yields the receipts of resource in ascending (fence, seq)
	// order; the caller may stop early.
	Stamps(resource string) iter.Seq2[ReceiptStamp, error]
	// DeleteReceipt deletes a receipt with its index entries.
	DeleteReceipt(ReceiptStamp) error
	// DeleteQuarantine deletes quarantine entries of resource.
	DeleteQuarantine(resource string, ids []string) error
	// TrimReceipts deletes the oldest receipts (in (fence, seq) order) of
	// rec's resource beyond the newest keep (keep >= 1), with their index
	// entries, at most MaxTrimPerCommit of them, and returns how many it
	// deleted, or 0 where the deletions are only planned here and happen
	// with the transaction's write (store/redis's step script). It is called in the transaction that wrote a receipt for
	// rec (Change.TrimKeep), after the receipt and rec were written. A
	// backend that keeps a count of each resource's receipts implements it
	// with TrimOldest; it must not scan the resource's receipts to count
	// them.
	TrimReceipts(rec Record, keep int) (int, error)

	// Stats reads the store's size.
	Stats() (Stats, error)
}

// Index names a set of resources a backend keeps in step with their
// records (PutRecord).
type Index int

// The indexes.
const (
	// IndexInFlight: resources with a mutation in flight or unknown.
	IndexInFlight Index = iota
	// IndexPaused: paused resources.
	IndexPaused
)

// CompactSnapshot is what compaction reads of one resource.
type CompactSnapshot struct {
	// Record is the resource's record (the zero Record when none).
	Record Record
	// Receipts is the number of its stored receipts.
	Receipts int
	// Quarantine holds its quarantine entries, in any order.
	Quarantine []Quarantine
}

// TxStore runs functions in a backend's transactions.
type TxStore interface {
	// Update runs fn in a read-write transaction: atomic, and durable when
	// it returns nil (for a durable backend). fn may run more than once (a
	// backend retries a lost optimistic race, or runs fn read-only first
	// and again in a write transaction once it writes); only the last run
	// counts, so fn sets its outputs on every run. An error fn returns
	// rolls everything back and is returned as it is. op names the
	// operation in the backend's own errors.
	Update(ctx context.Context, op string, fn func(Tx) error) error
	// View runs fn in a read-only transaction (one snapshot where the
	// backend has them).
	View(ctx context.Context, fn func(Tx) error) error
	// Generation returns the data set's generation (Store.Generation).
	Generation(ctx context.Context) (string, error)
	// Close releases the backend.
	Close() error
}

// TxOptions configures NewTxBackend.
type TxOptions struct {
	// MaxResponseBody is the stored response body limit (see BodyLimit).
	MaxResponseBody int
	// CompactEachResource makes Compact compact each resource in its own
	// transaction (store/redis: small WATCHes, a busy resource retries
	// alone) instead of all of one call in one transaction (store/bolt and
	// store/memory: one fsync, one lock).
	CompactEachResource bool
	// ClockLag is the most a Tx.Now may lag the backend's true clock
	// (store/redis: its estimate of the server's TIME, which its step
	// script lets lag by at most redis.StepBehind). A Begin decided at
	// Tx.Now has its Deadline and QuietAt placed this much later, so that
	// no window ends before the length the caller asked for, on the true
	// clock (beginAt). Zero for a backend that reads its clock, or has
	// none.
	ClockLag time.Duration
}

// NewTxBackend makes a Store out of a TxStore. Every call validates its
// input first (an *InputError, nothing read), then runs in one
// transaction.
func NewTxBackend(s TxStore, opts TxOptions) Store {
	return &txBackend{s: s, bodyLimit: BodyLimit(opts.MaxResponseBody), eachResource: opts.CompactEachResource, clockLag: max(opts.ClockLag, 0)}
}

type txBackend struct {
	s            TxStore
	bodyLimit    int
	eachResource bool
	clockLag     time.Duration
}

func (b *txBackend) Close() error { return b.s.Close() }

func (b *txBackend) Generation(ctx context.Context) (string, error) { return b.s.Generation(ctx) }

// decide runs one read-write step on resource: load its record (and the
// receipt of key), decide with f at the transaction's time, write the
// change. It returns the change, the quarantine entry as stored (merged
// with an earlier one) and the record as read.
func (b *txBackend) decide(ctx context.Context, op, resource string, key *ReceiptKey,
	f func(rec Record, rc *Receipt, now time.Time) (Change, error)) (ch Change, q *Quarantine, read Record, err error) {
	err = b.s.Update(ctx, op, func(tx Tx) error {
		ch, q, read = Change{}, nil, Record{}
		rec, rc, err := tx.Load(resource, key)
		if err != nil {
			return err
		}
		read = rec
		now, err := tx.Now()
		if err != nil {
			return err
		}
		if ch, err = f(rec, rc, now); err != nil {
			return err
		}
		q, err = writeChange(tx, ch)
		return err
	})
	if err != nil {
		return Change{}, nil, Record{}, err
	}
	return ch, q, read, nil
}

// writeChange writes ch in tx and returns the quarantine entry as stored.
func writeChange(tx Tx, ch Change) (*Quarantine, error) {
	if ch.WriteRecord {
		if err := tx.PutRecord(ch.Record); err != nil {
			return nil, err
		}
	}
	if ch.WriteReceipt {
		if err := tx.PutReceipt(*ch.Receipt); err != nil {
			return nil, err
		}
		if ch.TrimKeep > 0 {
			if _, err := tx.TrimReceipts(ch.Record, ch.TrimKeep); err != nil {
				return nil, err
			}
		}
	}
	if ch.Enforcement != nil {
		if err := tx.PutEnforcement(*ch.Enforcement); err != nil {
			return nil, err
		}
	}
	if ch.WriteTrust {
		if err := tx.PutTrustedKeys(ch.Trust); err != nil {
			return nil, err
		}
	}
	if ch.Quarantine == nil {
		return nil, nil
	}
	q := *ch.Quarantine
	prev, err := tx.Quarantine(q.Resource, q.ID)
	if err != nil {
		return nil, err
	}
	if prev != nil {
		q = q.Merge(*prev)
	}
	return &q, tx.PutQuarantine(q)
}
