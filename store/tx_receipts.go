package store

import (
	"context"
	"fmt"
)

// The receipt listings of NewTxBackend's Store: each one read-only
// transaction over Tx.Stamps (a resource's receipts in (fence, seq)
// order) and Tx.Receipts.

// receiptBatch is how many receipts ReceiptByID reads per Tx.Receipts.
const receiptBatch = 256

func (b *txBackend) ReceiptsOf(ctx context.Context, q ReceiptsQuery) ([]Receipt, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	var out []Receipt
	err := b.s.View(ctx, func(tx Tx) error {
		out = nil
		var keys []ReceiptKey
		for st, err := range tx.Stamps(q.Resource) {
			if err != nil {
				return err
			}
			if q.after(st.Key) {
				keys = append(keys, st.Key)
			}
			if len(keys) == q.Limit {
				break
			}
		}
		var err error
		out, err = readReceipts(tx, keys)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (b *txBackend) ReceiptByID(ctx context.Context, resource, id string) (Receipt, error) {
	if err := ValidateResource(resource); err != nil {
		return Receipt{}, err
	}
	if err := ValidateReceiptID(id); err != nil {
		return Receipt{}, err
	}
	var found *Receipt
	err := b.s.View(ctx, func(tx Tx) error {
		found = nil
		var keys []ReceiptKey
		for st, err := range tx.Stamps(resource) {
			if err != nil {
				return err
			}
			if keys = append(keys, st.Key); len(keys) < receiptBatch {
				continue
			}
			if found, err = findReceipt(tx, keys, id); err != nil || found != nil {
				return err
			}
			keys = keys[:0]
		}
		var err error
		found, err = findReceipt(tx, keys, id)
		return err
	})
	if err != nil {
		return Receipt{}, err
	}
	if found == nil {
		return Receipt{}, fmt.Errorf("store: receipt %s of %q: %w", id, resource, ErrNotFound)
	}
	return *found, nil
}

// readReceipts reads the receipts of keys, in their order; one compacted
// since its stamp was read (a backend whose reads are not one snapshot)
// is left out.
func readReceipts(tx Tx, keys []ReceiptKey) ([]Receipt, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	rcs, err := tx.Receipts(keys)
	if err != nil {
		return nil, err
	}
	out := make([]Receipt, 0, len(rcs))
	for i, rc := range rcs {
		if rc == nil {
			continue
		}
		if rc.Key() != keys[i] {
			return nil, fmt.Errorf("store: receipt of %+v read for %+v: %w", rc.Key(), keys[i], ErrCorrupt)
		}
		out = append(out, rc.Clone())
	}
	return out, nil
}

// findReceipt is the receipt of keys whose ID is id, or nil.
func findReceipt(tx Tx, keys []ReceiptKey, id string) (*Receipt, error) {
	rcs, err := readReceipts(tx, keys)
	if err != nil {
		return nil, err
	}
	for i := range rcs {
		if rcs[i].ID == id {
			return &rcs[i], nil
		}
	}
	return nil, nil
}
