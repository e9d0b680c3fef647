package bolt

import (
	"bytes"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/fencegate/fencegate/store"
)

// tx is a store.Tx over a bbolt transaction. wrote records whether a
// write was made through it; it is nil in the read-only run of an Update
// (and in a View), where the first write ends the run with errWrites.
type tx struct {
	t     *bbolt.Tx
	wrote *bool
}

// bucket returns a bucket to write to, noting the write.
func (t tx) bucket(name []byte) (*bbolt.Bucket, error) {
	if t.wrote == nil {
		return nil, errWrites
	}
	*t.wrote = true
	return t.t.Bucket(name), nil
}

func (t tx) Load(resource string, key *store.ReceiptKey) (store.Record, *store.Receipt, error) {
	rec, err := loadRecord(t.t, resource)
	if err != nil || key == nil {
		return rec, nil, err
	}
	rc, err := loadReceipt(t.t, *key)
	return rec, rc, err
}

// Now is zero: a bolt store decides at the caller's time.
func (tx) Now() (time.Time, error) { return time.Time{}, nil }

func (t tx) PutRecord(r store.Record) error {
	b, err := t.bucket(bucketRecords)
	if err != nil {
		return err
	}
	key := []byte(r.Resource)
	if err := putRecord(b, key, r); err != nil {
		return err
	}
	if err := setIndex(t.t.Bucket(bucketInFlight), key, r.InFlight != nil); err != nil {
		return err
	}
	return setIndex(t.t.Bucket(bucketPaused), key, r.Pause != nil)
}

func (t tx) PutReceipt(r store.Receipt) error {
	b, err := t.bucket(bucketReceipts)
	if err != nil {
		return err
	}
	rk := receiptKey(r.Key())
	if b.Get(rk) == nil {
		if err := t.addCount(r.Resource, 1); err != nil {
			return err
		}
	}
	if err := putReceipt(b, rk, r); err != nil {
		return err
	}
	return t.t.Bucket(bucketOps).Put(opKey(r.Resource, r.OperationID, r.Fence), rk)
}

func (t tx) Quarantine(resource, id string) (*store.Quarantine, error) {
	var q store.Quarantine
	ok, err := get(t.t.Bucket(bucketQuarantine), quarantineKey(resource, id), &q)
	if err != nil || !ok {
		return nil, err
	}
	return &q, nil
}

func (t tx) PutQuarantine(q store.Quarantine) error {
	b, err := t.bucket(bucketQuarantine)
	if err != nil {
		return err
	}
	return put(b, quarantineKey(q.Resource, q.ID), q)
}

func (t tx) Enforcement(shape string) (*store.Enforcement, error) {
	return loadEnforcement(t.t, shape)
}

func (t tx) PutEnforcement(e store.Enforcement) error {
	b, err := t.bucket(bucketEnforcement)
	if err != nil {
		return err
	}
	return put(b, []byte(e.Shape), e)
}

// Enforcements reads the ledger by shape (the bucket's byte order).
func (t tx) Enforcements() ([]store.Enforcement, error) {
	var out []store.Enforcement
	err := t.t.Bucket(bucketEnforcement).ForEach(func(k, _ []byte) error {
		e, err := loadEnforcement(t.t, string(k))
		if err != nil {
			return err
		}
		out = append(out, *e)
		return nil
	})
	return out, err
}

func (t tx) TrustedKeys() ([]store.TrustedKey, error) { return loadTrust(t.t) }

// PutTrustedKeys replaces the bucket of pins.
func (t tx) PutTrustedKeys(pins []store.TrustedKey) error {
	if _, err := t.bucket(bucketTrust); err != nil {
		return err
	}
	if err := t.t.DeleteBucket(bucketTrust); err != nil {
		return err
	}
	b, err := t.t.CreateBucket(bucketTrust)
	if err != nil {
		return err
	}
	for _, p := range pins {
		if err := put(b, []byte(p.Kid), p); err != nil {
			return err
		}
	}
	return nil
}

func (t tx) Receipts(keys []store.ReceiptKey) ([]*store.Receipt, error) {
	out := make([]*store.Receipt, len(keys))
	for i, k := range keys {
		var err error
		if out[i], err = loadReceipt(t.t, k); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// OperationFences reads the operation's index; an entry naming a missing
// receipt is ErrCorrupt (the index and the receipts are one snapshot).
func (t tx) OperationFences(resource, operationID string) ([]uint64, error) {
	var out []uint64
	prefix := opPrefix(resource, operationID)
	receipts := t.t.Bucket(bucketReceipts)
	c := t.t.Bucket(bucketOps).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		rest := k[len(prefix):]
		if len(rest) != 8 {
			return nil, fmt.Errorf("store: bolt: op index key %q: %w", k, store.ErrCorrupt)
		}
		if receipts.Get(v) == nil {
			return nil, fmt.Errorf("store: bolt: op index %q names a missing receipt: %w", k, store.ErrCorrupt)
		}
		fence := uint64(0)
		for _, b := range rest {
			fence = fence<<8 | uint64(b)
		}
		out = append(out, fence)
	}
	return out, nil
}

// Indexed reads the records an index names, by resource (the bucket's
// byte order); a record the index names without its marker (pause) is
// ErrCorrupt.
func (t tx) Indexed(index store.Index) ([]store.Record, error) {
	bucket, what := bucketInFlight, "in-flight index names %q without a marker"
	if index == store.IndexPaused {
		bucket, what = bucketPaused, "paused index names %q without a pause"
	}
	var out []store.Record
	err := t.t.Bucket(bucket).ForEach(func(k, _ []byte) error {
		rec, err := loadRecord(t.t, string(k))
		if err != nil {
			return err
		}
		if index == store.IndexInFlight && rec.InFlight == nil || index == store.IndexPaused && rec.Pause == nil {
			return fmt.Errorf("store: bolt: "+what+": %w", k, store.ErrCorrupt)
		}
		out = append(out, rec)
		return nil
	})
	return out, err
}

// RecordsAfter is a cursor over the records bucket, whose byte order is
// resource order.
func (t tx) RecordsAfter(after string, limit int) ([]store.Record, error) {
	out := make([]store.Record, 0, min(limit, 64))
	c := t.t.Bucket(bucketRecords).Cursor()
	k, _ := c.Seek([]byte(after))
	if k != nil && after != "" && string(k) == after {
		k, _ = c.Next()
	}
	for ; k != nil && len(out) < limit; k, _ = c.Next() {
		rec, err := loadRecord(t.t, string(k))
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}

func (t tx) Quarantined(resource string) ([]store.Quarantine, error) {
	var prefix []byte
	if resource != "" {
		prefix = quarantinePrefix(resource)
	}
	var out []store.Quarantine
	b := t.t.Bucket(bucketQuarantine)
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		var q store.Quarantine
		if _, err := get(b, k, &q); err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, nil
}

func setIndex(b *bbolt.Bucket, key []byte, present bool) error {
	if present {
		return b.Put(key, []byte{})
	}
	return b.Delete(key)
}
