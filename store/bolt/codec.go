package bolt

import (
	"encoding/json"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/codec"
)

// Records and receipts are written in the binary encoding of store/codec
// and read in either it or JSON (schema 1, and values not rewritten since
// the upgrade); the other values are JSON (get, put).

// recordCap and receiptCap are the buffers a value is encoded into, enough
// for a record with a marker, a receipt without its response (bbolt keeps
// each value until its transaction ends, so buffers are not reused).
const (
	recordCap  = 512
	receiptCap = 320
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
	raw := tx.Bucket(bucketRecords).Get([]byte(resource))
	if raw == nil {
		return store.Record{}, nil
	}
	r, err := codec.DecodeRecord(raw)
	if err != nil {
		return store.Record{}, fmt.Errorf("store: bolt: record %q: %w", resource, err)
	}
	if r.Resource != resource {
		return store.Record{}, fmt.Errorf("store: bolt: record under %q names %q: %w", resource, r.Resource, store.ErrCorrupt)
	}
	return r, nil
}

func putRecord(b *bbolt.Bucket, key []byte, r store.Record) error {
	return b.Put(key, codec.EncodeRecord(make([]byte, 0, recordCap), r))
}

// loadReceipt returns the stored receipt of k, or nil.
func loadReceipt(tx *bbolt.Tx, k store.ReceiptKey) (*store.Receipt, error) {
	var kb [keyBuf]byte
	raw := tx.Bucket(bucketReceipts).Get(appendReceiptKey(kb[:0], k))
	if raw == nil {
		return nil, nil
	}
	r, err := codec.DecodeReceipt(raw)
	if err != nil {
		return nil, fmt.Errorf("store: bolt: receipt %v: %w", k, err)
	}
	if r.Key() != k {
		return nil, fmt.Errorf("store: bolt: receipt under %v names %v: %w", k, r.Key(), store.ErrCorrupt)
	}
	return &r, nil
}

func putReceipt(b *bbolt.Bucket, key []byte, r store.Receipt) error {
	n := receiptCap + len(r.Response.Body)
	for k, vs := range r.Response.Header {
		n += len(k) + 2
		for _, v := range vs {
			n += len(v) + 2
		}
	}
	return b.Put(key, codec.EncodeReceipt(make([]byte, 0, n), r))
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
