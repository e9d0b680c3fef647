package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"

	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

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

// stamps yields the receipts of resource in ascending (fence, seq) order:
// the byte order of their keys.
func stamps(tx *bbolt.Tx, resource string) iter.Seq2[store.ReceiptStamp, error] {
	return func(yield func(store.ReceiptStamp, error) bool) {
		b := tx.Bucket(bucketReceipts)
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

// planResource runs store.PlanCompaction for one resource.
func planResource(tx *bbolt.Tx, resource string, in store.CompactInput, budget int) (store.CompactPlan, error) {
	rec, err := loadRecord(tx, resource)
	if err != nil {
		return store.CompactPlan{}, err
	}
	prefix := receiptPrefix(resource)
	total := 0
	c := tx.Bucket(bucketReceipts).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		total++
	}
	var qs []store.Quarantine
	qb := tx.Bucket(bucketQuarantine)
	qprefix := quarantinePrefix(resource)
	qc := qb.Cursor()
	for k, _ := qc.Seek(qprefix); k != nil && bytes.HasPrefix(k, qprefix); k, _ = qc.Next() {
		var q store.Quarantine
		if _, err := get(qb, k, &q); err != nil {
			return store.CompactPlan{}, err
		}
		if q.Resource != resource {
			return store.CompactPlan{}, fmt.Errorf("store: bolt: quarantine entry under %q names %q: %w", k, q.Resource, store.ErrCorrupt)
		}
		qs = append(qs, q)
	}
	return store.PlanCompaction(rec, total, stamps(tx, resource), qs, in, budget)
}

// planAll plans a compaction over every resource, in byte order, until the
// budget is spent. It returns the resources with something to delete and
// whether more remains beyond the budget.
func planAll(tx *bbolt.Tx, in store.CompactInput) (due []string, more bool, err error) {
	withReceipts, err := groupResources(tx.Bucket(bucketReceipts))
	if err != nil {
		return nil, false, err
	}
	withQuarantine, err := groupResources(tx.Bucket(bucketQuarantine))
	if err != nil {
		return nil, false, err
	}
	budget := in.MaxDeletes
	for _, resource := range mergeSorted(withReceipts, withQuarantine) {
		if budget == 0 {
			// Spent: only find out whether anything is left.
			p, err := planResource(tx, resource, in, 1)
			if err != nil {
				return nil, false, err
			}
			if p.Deletes() > 0 {
				return due, true, nil
			}
			continue
		}
		p, err := planResource(tx, resource, in, budget)
		if err != nil {
			return nil, false, err
		}
		if p.Deletes() > 0 {
			due = append(due, resource)
			budget -= p.Deletes()
		}
		if p.More {
			return due, true, nil
		}
	}
	return due, false, nil
}

// applyPlan deletes what p lists, with the operation-ID index entries of the
// receipts.
func applyPlan(tx *bbolt.Tx, resource string, p store.CompactPlan) error {
	receipts, ops, quarantine := tx.Bucket(bucketReceipts), tx.Bucket(bucketOps), tx.Bucket(bucketQuarantine)
	for _, st := range p.Receipts {
		if err := receipts.Delete(receiptKey(st.Key)); err != nil {
			return err
		}
		if err := ops.Delete(opKey(resource, st.OperationID, st.Key.Fence)); err != nil {
			return err
		}
	}
	for _, id := range p.Quarantine {
		if err := quarantine.Delete(quarantineKey(resource, id)); err != nil {
			return err
		}
	}
	return nil
}

// Compact implements store.Store. It plans in a read-only transaction (a
// call with nothing to delete costs no fsync), then plans each resource
// found again on the latest state and deletes, all in one durable write
// transaction of at most MaxDeletes deletions.
func (s *Store) Compact(ctx context.Context, in store.CompactInput) (store.CompactResult, error) {
	if err := in.Validate(); err != nil {
		return store.CompactResult{}, err
	}
	var (
		due  []string
		more bool
	)
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var err error
		due, more, err = planAll(tx, in)
		return err
	})
	if err != nil || len(due) == 0 {
		return store.CompactResult{More: more}, err
	}
	var res store.CompactResult
	err = s.write(ctx, func(tx *bbolt.Tx) error {
		res = store.CompactResult{More: more}
		for _, resource := range due {
			budget := in.MaxDeletes - res.Receipts - res.Quarantine
			if budget == 0 {
				res.More = true
				break
			}
			p, err := planResource(tx, resource, in, budget)
			if err != nil {
				return err
			}
			if err := applyPlan(tx, resource, p); err != nil {
				return err
			}
			res.Receipts += len(p.Receipts)
			res.Quarantine += len(p.Quarantine)
			res.More = res.More || p.More
		}
		return nil
	})
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return store.CompactResult{}, store.ErrClosed
	}
	if err != nil {
		return store.CompactResult{}, err
	}
	return res, nil
}

// Stats implements store.Store. Bytes is the size of the file's data
// (bbolt's Tx.Size). It does not shrink after Compact: bbolt reuses freed
// pages for later writes instead of returning them, so it stays flat once
// retention balances new writes.
func (s *Store) Stats(ctx context.Context) (store.Stats, error) {
	var st store.Stats
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		st = store.Stats{
			Resources:   tx.Bucket(bucketRecords).Stats().KeyN,
			Receipts:    tx.Bucket(bucketReceipts).Stats().KeyN,
			Quarantined: tx.Bucket(bucketQuarantine).Stats().KeyN,
			Bytes:       tx.Size(),
		}
		return nil
	})
	return st, err
}
