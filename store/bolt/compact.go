package bolt

import (
	"bytes"
	"fmt"
	"iter"

	"go.etcd.io/bbolt"

	"github.com/fencegate/fencegate/store"
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

// CompactResources lists the resources with receipts or quarantine
// entries, in byte order.
func (t tx) CompactResources() ([]string, error) {
	withReceipts, err := groupResources(t.t.Bucket(bucketReceipts))
	if err != nil {
		return nil, err
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
		b := t.t.Bucket(bucketReceipts)
		prefix := receiptPrefix(resource)
		c := b.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			var r store.Receipt
			if _, err := get(b, k, &r); err != nil {
				yield(store.ReceiptStamp{}, err)
				return
			}
			if !bytes.Equal(receiptKey(r.Key()), k) {
				yield(store.ReceiptStamp{}, fmt.Errorf("store: bolt: receipt under %q names %v: %w", k, r.Key(), store.ErrCorrupt))
				return
			}
			if !yield(r.Stamp(), nil) {
				return
			}
		}
	}
}

// CompactSnapshot reads the record of resource, counts its receipts and
// reads its quarantine entries.
func (t tx) CompactSnapshot(resource string) (store.CompactSnapshot, error) {
	rec, err := loadRecord(t.t, resource)
	if err != nil {
		return store.CompactSnapshot{}, err
	}
	snap := store.CompactSnapshot{Record: rec}
	prefix := receiptPrefix(resource)
	c := t.t.Bucket(bucketReceipts).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		snap.Receipts++
	}
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

// DeleteReceipt deletes a receipt with its operation-ID index entry.
func (t tx) DeleteReceipt(st store.ReceiptStamp) error {
	b, err := t.bucket(bucketReceipts)
	if err != nil {
		return err
	}
	if err := b.Delete(receiptKey(st.Key)); err != nil {
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

// Stats reads the store's size. Bytes is the size of the file's data
// (bbolt's Tx.Size). It does not shrink after Compact: bbolt reuses freed
// pages for later writes instead of returning them, so it stays flat once
// retention balances new writes.
func (t tx) Stats() (store.Stats, error) {
	return store.Stats{
		Resources:   t.t.Bucket(bucketRecords).Stats().KeyN,
		Receipts:    t.t.Bucket(bucketReceipts).Stats().KeyN,
		Quarantined: t.t.Bucket(bucketQuarantine).Stats().KeyN,
		Bytes:       t.t.Size(),
	}, nil
}

// TrimReceipts of store.Tx.
func (t tx) TrimReceipts(rec store.Record, keep int) (int, error) {
	prefix := receiptPrefix(rec.Resource)
	n := 0
	c := t.t.Bucket(bucketReceipts).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		n++
	}
	return store.TrimOldest(t, rec, n, keep)
}
