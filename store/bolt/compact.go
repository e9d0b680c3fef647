package bolt

import (
	"bytes"
	"fmt"
	"iter"

	"go.etcd.io/bbolt"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/codec"
)

// receiptPrefix is the key prefix of a resource's receipts.
func receiptPrefix(resource string) []byte {
	return append([]byte(resource), 0)
}

// nextResource returns the first key after every key of resource's group
// (resource 0x00 ...): resources never contain control characters.
func nextResource(resource string) []byte {
	return append([]byte(resource), 1)
}

// groupResources returns, in byte order, the resources that have keys in b
// (keys are resource 0x00 ...), seeking past each group.
func groupResources(b *bbolt.Bucket) ([]string, error) {
	var out []string
	c := b.Cursor()
	for k, _ := c.First(); k != nil; {
		i := bytes.IndexByte(k, 0)
		if i <= 0 {
			return nil, fmt.Errorf("store: bolt: key %q has no resource: %w", k, store.ErrCorrupt)
		}
		resource := string(k[:i])
		out = append(out, resource)
		k, _ = c.Seek(nextResource(resource))
	}
	return out, nil
}

// mergeSorted merges two ascending lists of resources without duplicates.
func mergeSorted(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	for len(a) > 0 || len(b) > 0 {
		switch {
		case len(b) == 0 || (len(a) > 0 && a[0] < b[0]):
			out, a = append(out, a[0]), a[1:]
		case len(a) == 0 || b[0] < a[0]:
			out, b = append(out, b[0]), b[1:]
		default:
			out, a, b = append(out, a[0]), a[1:], b[1:]
		}
	}
	return out
}

// CompactResources lists the resources with receipts (the keys of the
// counts bucket) or quarantine entries, in byte order.
func (t tx) CompactResources() ([]string, error) {
	var withReceipts []string
	c := t.t.Bucket(bucketCounts).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		withReceipts = append(withReceipts, string(k))
	}
	withQuarantine, err := groupResources(t.t.Bucket(bucketQuarantine))
	if err != nil {
		return nil, err
	}
	return mergeSorted(withReceipts, withQuarantine), nil
}

// Stamps yields the receipts of resource in ascending (fence, seq) order:
// the byte order of their keys.
func (t tx) Stamps(resource string) iter.Seq2[store.ReceiptStamp, error] {
	return func(yield func(store.ReceiptStamp, error) bool) {
		prefix := receiptPrefix(resource)
		c := t.t.Bucket(bucketReceipts).Cursor()
		var kb [keyBuf]byte
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			st, err := codec.DecodeStamp(v)
			if err != nil {
				yield(store.ReceiptStamp{}, fmt.Errorf("store: bolt: receipt under %q: %w", k, err))
				return
			}
			if !bytes.Equal(appendReceiptKey(kb[:0], st.Key), k) {
				yield(store.ReceiptStamp{}, fmt.Errorf("store: bolt: receipt under %q names %v: %w", k, st.Key, store.ErrCorrupt))
				return
			}
			if !yield(st, nil) {
				return
			}
		}
	}
}

// CompactSnapshot reads the record of resource, the count of its receipts
// and its quarantine entries.
func (t tx) CompactSnapshot(resource string) (store.CompactSnapshot, error) {
	rec, err := loadRecord(t.t, resource)
	if err != nil {
		return store.CompactSnapshot{}, err
	}
	n, err := t.count(resource)
	if err != nil {
		return store.CompactSnapshot{}, err
	}
	snap := store.CompactSnapshot{Record: rec, Receipts: n}
	qb := t.t.Bucket(bucketQuarantine)
	qprefix := quarantinePrefix(resource)
	qc := qb.Cursor()
	for k, _ := qc.Seek(qprefix); k != nil && bytes.HasPrefix(k, qprefix); k, _ = qc.Next() {
		var q store.Quarantine
		if _, err := get(qb, k, &q); err != nil {
			return store.CompactSnapshot{}, err
		}
		if q.Resource != resource {
			return store.CompactSnapshot{}, fmt.Errorf("store: bolt: quarantine entry under %q names %q: %w", k, q.Resource, store.ErrCorrupt)
		}
		snap.Quarantine = append(snap.Quarantine, q)
	}
	return snap, nil
}

// DeleteReceipt deletes a receipt with its operation-ID index entry, and
// counts it out.
func (t tx) DeleteReceipt(st store.ReceiptStamp) error {
	b, err := t.bucket(bucketReceipts)
	if err != nil {
		return err
	}
	rk := receiptKey(st.Key)
	if b.Get(rk) != nil {
		if err := t.addCount(st.Key.Resource, -1); err != nil {
			return err
		}
	}
	if err := b.Delete(rk); err != nil {
		return err
	}
	return t.t.Bucket(bucketOps).Delete(opKey(st.Key.Resource, st.OperationID, st.Key.Fence))
}

func (t tx) DeleteQuarantine(resource string, ids []string) error {
	b, err := t.bucket(bucketQuarantine)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := b.Delete(quarantineKey(resource, id)); err != nil {
			return err
		}
	}
	return nil
}

// Stats reads the store's size. Receipts is the sum of the counts bucket
// (one key per resource with receipts), never a walk of the receipts
// bucket: bbolt's Bucket.Stats visits every page, which at the default
// retention is the whole file (a 100 MiB read, and as many pages faulted
// into the sidecar's resident set, each time the sidecar refreshes its
// gauges after a compaction pass). Bytes is the size of the file's data
// (bbolt's Tx.Size). It does not shrink after Compact: bbolt reuses freed
// pages for later writes instead of returning them, so it stays flat once
// retention balances new writes.
func (t tx) Stats() (store.Stats, error) {
	receipts := 0
	c := t.t.Bucket(bucketCounts).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		n, err := decodeCount(v)
		if err != nil {
			return store.Stats{}, fmt.Errorf("store: bolt: receipt count of %q %w", k, err)
		}
		receipts += n
	}
	return store.Stats{
		Resources:   t.t.Bucket(bucketRecords).Stats().KeyN,
		Receipts:    receipts,
		Quarantined: t.t.Bucket(bucketQuarantine).Stats().KeyN,
		Bytes:       t.t.Size(),
	}, nil
}

// TrimReceipts of store.Tx: store.TrimOldest with the stored count.
func (t tx) TrimReceipts(rec store.Record, keep int) (int, error) {
	n, err := t.count(rec.Resource)
	if err != nil {
		return 0, err
	}
	return store.TrimOldest(t, rec, n, keep)
}
