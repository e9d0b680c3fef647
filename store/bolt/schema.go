package bolt

import (
	"encoding/binary"
	"fmt"
	"strconv"

	"go.etcd.io/bbolt"

	"github.com/fencegate/fencegate/store"
)

// SchemaVersion is the version of the file format written by this package.
const SchemaVersion = 1

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
		empty := true
		_ = tx.ForEach(func([]byte, *bbolt.Bucket) error { empty = false; return nil })
		if !empty {
			return fmt.Errorf("store: bolt: file has buckets but no meta bucket: %w", store.ErrCorrupt)
		}
		var err error
		if meta, err = tx.CreateBucket(bucketMeta); err != nil {
			return err
		}
		if err := meta.Put(keyFormat, []byte(formatName)); err != nil {
			return err
		}
		if err := meta.Put(keySchema, []byte(strconv.Itoa(SchemaVersion))); err != nil {
			return err
		}
	}
	if f := string(meta.Get(keyFormat)); f != formatName {
		return fmt.Errorf("store: bolt: file format %q, want %q: %w", f, formatName, store.ErrCorrupt)
	}
	if v := string(meta.Get(keySchema)); v != strconv.Itoa(SchemaVersion) {
		return fmt.Errorf("store: bolt: schema version %q, want %d: %w", v, SchemaVersion, store.ErrCorrupt)
	}
	for _, name := range dataBuckets {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	g := meta.Get(keyGeneration)
	if g == nil {
		return meta.Put(keyGeneration, []byte(store.NewGeneration()))
	}
	if err := store.ValidateGeneration(string(g)); err != nil {
		return fmt.Errorf("store: bolt: file generation %q: %v: %w", g, err, store.ErrCorrupt)
	}
	return nil
}

func receiptKey(k store.ReceiptKey) []byte {
	b := make([]byte, 0, len(k.Resource)+17)
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
