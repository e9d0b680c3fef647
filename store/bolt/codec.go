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

// loadEnforcement returns the ledger entry of shape, or nil.
func loadEnforcement(tx *bbolt.Tx, shape string) (*store.Enforcement, error) {
	var e store.Enforcement
	ok, err := get(tx.Bucket(bucketEnforcement), []byte(shape), &e)
	if err != nil || !ok {
		return nil, err
	}
	if e.Shape != shape {
		return nil, fmt.Errorf("store: bolt: enforcement entry under %q names %q: %w", shape, e.Shape, store.ErrCorrupt)
	}
	return &e, nil
}

// loadTrust returns the trust pins, by kid (the bucket's byte order).
func loadTrust(tx *bbolt.Tx) ([]store.TrustedKey, error) {
	b := tx.Bucket(bucketTrust)
	out := []store.TrustedKey{}
	err := b.ForEach(func(k, _ []byte) error {
		var p store.TrustedKey
		if _, err := get(b, k, &p); err != nil {
			return err
		}
		if p.Kid != string(k) {
			return fmt.Errorf("store: bolt: trust pin under %q names %q: %w", k, p.Kid, store.ErrCorrupt)
		}
		out = append(out, p)
		return nil
	})
	return out, err
}
