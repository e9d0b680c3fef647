package bolt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"

	"go.etcd.io/bbolt"

	"github.com/fencegate/fencegate/store"
)

// SchemaVersion is the version of the file format written by this package.
// Schema 2 writes records and receipts in the binary encoding of
// store/codec and keeps the counts bucket; Open upgrades a schema-1 file in
// place (upgradeFrom1), which older binaries then refuse.
const SchemaVersion = 2

// formatName identifies a fencegate store file in the meta bucket.
const formatName = "fencegate.store"

var (
	bucketMeta       = []byte("meta")
	bucketRecords    = []byte("records")
	bucketReceipts   = []byte("receipts")
	bucketOps        = []byte("ops")
	bucketQuarantine = []byte("quarantine")
	bucketInFlight   = []byte("inflight")
	bucketPaused     = []byte("paused")
	// bucketEnforcement holds the enforcement ledger. It came after schema
	// 1 was released without a format change: Open creates it in an older
	// file, which older binaries open and ignore.
	bucketEnforcement = []byte("enforcement")
	// bucketTrust holds the trust pins (kid → JSON store.TrustedKey),
	// added within schema 1 like bucketEnforcement.
	bucketTrust = []byte("trust")
	// bucketCounts holds the number of each resource's receipts (resource
	// → uint64 big-endian; no key for none), kept in step with the receipts
	// bucket by PutReceipt and DeleteReceipt: schema 2.
	bucketCounts = []byte("counts")

	dataBuckets = [][]byte{bucketRecords, bucketReceipts, bucketOps, bucketQuarantine, bucketInFlight, bucketPaused, bucketEnforcement, bucketTrust}

	keyFormat = []byte("format")
	keySchema = []byte("schema")
	// keyGeneration is the file's generation (store.Store.Generation): a
	// random ID written once, when a file is created or first opened by a
	// version that keeps it (within schema 1; older binaries ignore it).
	keyGeneration = []byte("generation")
)

// initSchema creates the buckets of a new file, or checks an existing one.
func initSchema(tx *bbolt.Tx) error {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		var err error
		if meta, err = createMeta(tx); err != nil {
			return err
		}
	}
	if f := string(meta.Get(keyFormat)); f != formatName {
		return fmt.Errorf("store: bolt: file format %q, want %q: %w", f, formatName, store.ErrCorrupt)
	}
	v := string(meta.Get(keySchema))
	if v != strconv.Itoa(SchemaVersion) && v != "1" {
		return fmt.Errorf("store: bolt: schema version %q, want %d: %w", v, SchemaVersion, store.ErrCorrupt)
	}
	for _, name := range dataBuckets {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	if v == "1" {
		if err := upgradeFrom1(tx, meta); err != nil {
			return fmt.Errorf("store: bolt: upgrade from schema 1: %w", err)
		}
	} else if tx.Bucket(bucketCounts) == nil {
		return fmt.Errorf("store: bolt: schema %d file without its counts bucket: %w", SchemaVersion, store.ErrCorrupt)
	}
	return checkGeneration(meta)
}

// createMeta starts a new file: its meta bucket (format, schema) and its
// counts bucket. A file with buckets but no meta is not one of ours.
func createMeta(tx *bbolt.Tx) (*bbolt.Bucket, error) {
	empty := true
	_ = tx.ForEach(func([]byte, *bbolt.Bucket) error { empty = false; return nil })
	if !empty {
		return nil, fmt.Errorf("store: bolt: file has buckets but no meta bucket: %w", store.ErrCorrupt)
	}
	meta, err := tx.CreateBucket(bucketMeta)
	if err != nil {
		return nil, err
	}
	if err := meta.Put(keyFormat, []byte(formatName)); err != nil {
		return nil, err
	}
	if err := meta.Put(keySchema, []byte(strconv.Itoa(SchemaVersion))); err != nil {
		return nil, err
	}
	if _, err := tx.CreateBucket(bucketCounts); err != nil {
		return nil, err
	}
	return meta, nil
}

// checkGeneration writes a file's generation once, when it has none, or
// checks the one it has.
func checkGeneration(meta *bbolt.Bucket) error {
	g := meta.Get(keyGeneration)
	if g == nil {
		return meta.Put(keyGeneration, []byte(store.NewGeneration()))
	}
	if err := store.ValidateGeneration(string(g)); err != nil {
		return fmt.Errorf("store: bolt: file generation %q: %v: %w", g, err, store.ErrCorrupt)
	}
	return nil
}

// keyBuf is the size of a stack buffer for a key only looked up (bbolt
// keeps the keys it is given to Put until the transaction ends, so those
// are allocated).
const keyBuf = 128

// upgradeFrom1 makes a schema-1 file a schema-2 one, in Open's transaction:
// it counts each resource's receipts (one pass over the receipts bucket, in
// key order: a resource's receipts are adjacent) into a new counts bucket
// and writes schema 2. Values stay JSON until rewritten; both encodings
// are read.
func upgradeFrom1(tx *bbolt.Tx, meta *bbolt.Bucket) error {
	if tx.Bucket(bucketCounts) != nil {
		// Not written by any schema-1 binary: rebuilt all the same.
		if err := tx.DeleteBucket(bucketCounts); err != nil {
			return err
		}
	}
	counts, err := tx.CreateBucket(bucketCounts)
	if err != nil {
		return err
	}
	var resource []byte
	var n uint64
	flush := func() error {
		if n == 0 {
			return nil
		}
		return counts.Put(resource, binary.BigEndian.AppendUint64(nil, n))
	}
	c := tx.Bucket(bucketReceipts).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		i := bytes.IndexByte(k, 0)
		if i <= 0 || len(k) != i+17 {
			return fmt.Errorf("receipt key %q: %w", k, store.ErrCorrupt)
		}
		if !bytes.Equal(k[:i], resource) {
			if err := flush(); err != nil {
				return err
			}
			resource, n = append([]byte(nil), k[:i]...), 0
		}
		n++
	}
	if err := flush(); err != nil {
		return err
	}
	return meta.Put(keySchema, []byte(strconv.Itoa(SchemaVersion)))
}

func receiptKey(k store.ReceiptKey) []byte {
	return appendReceiptKey(make([]byte, 0, len(k.Resource)+17), k)
}

func appendReceiptKey(b []byte, k store.ReceiptKey) []byte {
	b = append(b, k.Resource...)
	b = append(b, 0)
	b = binary.BigEndian.AppendUint64(b, k.Fence)
	return binary.BigEndian.AppendUint64(b, k.Seq)
}

func opPrefix(resource, operationID string) []byte {
	b := make([]byte, 0, len(resource)+len(operationID)+10)
	b = append(b, resource...)
	b = append(b, 0)
	b = append(b, operationID...)
	return append(b, 0)
}

func opKey(resource, operationID string, fence uint64) []byte {
	return binary.BigEndian.AppendUint64(opPrefix(resource, operationID), fence)
}

func quarantinePrefix(resource string) []byte {
	return append([]byte(resource), 0)
}

func quarantineKey(resource, id string) []byte {
	return append(quarantinePrefix(resource), id...)
}
