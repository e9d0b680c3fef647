package bolt

import (
	"encoding/json"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/fencegate/fencegate/store"
)

// get decodes the JSON value stored under key into v; false if absent.
func get(b *bbolt.Bucket, key []byte, v any) (bool, error) {
	raw := b.Get(key)
	if raw == nil {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return false, fmt.Errorf("store: bolt: decode value of %q: %v: %w", key, err, store.ErrCorrupt)
	}
	return true, nil
}

func put(b *bbolt.Bucket, key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("store: bolt: encode: %w", err)
	}
	return b.Put(key, raw)
}

// loadRecord returns the stored record of resource, or the zero Record.
func loadRecord(tx *bbolt.Tx, resource string) (store.Record, error) {
	var r store.Record
	ok, err := get(tx.Bucket(bucketRecords), []byte(resource), &r)
	if err != nil || !ok {
		return store.Record{}, err
	}
	if r.Resource != resource {
		return store.Record{}, fmt.Errorf("store: bolt: record under %q names %q: %w", resource, r.Resource, store.ErrCorrupt)
	}
	return r, nil
}

// loadReceipt returns the stored receipt of k, or nil.
func loadReceipt(tx *bbolt.Tx, k store.ReceiptKey) (*store.Receipt, error) {
	var r store.Receipt
	ok, err := get(tx.Bucket(bucketReceipts), receiptKey(k), &r)
	if err != nil || !ok {
		return nil, err
	}
	if r.Key() != k {
		return nil, fmt.Errorf("store: bolt: receipt under %v names %v: %w", k, r.Key(), store.ErrCorrupt)
	}
	return &r, nil
}

// applyChange writes a change and keeps the indexes in step. It returns the
// quarantine entry as stored (merged with an earlier one), if any.
func applyChange(tx *bbolt.Tx, ch store.Change) (*store.Quarantine, error) {
	if ch.WriteRecord {
		r := ch.Record
		key := []byte(r.Resource)
		if err := put(tx.Bucket(bucketRecords), key, r); err != nil {
			return nil, err
		}
		if err := setIndex(tx.Bucket(bucketInFlight), key, r.InFlight != nil); err != nil {
			return nil, err
		}
		if err := setIndex(tx.Bucket(bucketPaused), key, r.Pause != nil); err != nil {
			return nil, err
		}
	}
	if ch.WriteReceipt {
		r := ch.Receipt
		rk := receiptKey(r.Key())
		if err := put(tx.Bucket(bucketReceipts), rk, r); err != nil {
			return nil, err
		}
		if err := tx.Bucket(bucketOps).Put(opKey(r.Resource, r.OperationID, r.Fence), rk); err != nil {
			return nil, err
		}
	}
	if ch.Quarantine == nil {
		return nil, nil
	}
	q := *ch.Quarantine
	b := tx.Bucket(bucketQuarantine)
	key := quarantineKey(q.Resource, q.ID)
	var prev store.Quarantine
	ok, err := get(b, key, &prev)
	if err != nil {
		return nil, err
	}
	if ok {
		q = q.Merge(prev)
	}
	return &q, put(b, key, q)
}

func setIndex(b *bbolt.Bucket, key []byte, present bool) error {
	if present {
		return b.Put(key, []byte{})
	}
	return b.Delete(key)
}
