package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The reads of NewTxBackend's Store: each one read-only transaction.

func (b *txBackend) Record(ctx context.Context, resource string) (Record, error) {
	if err := ValidateResource(resource); err != nil {
		return Record{}, err
	}
	var rec Record
	err := b.s.View(ctx, func(tx Tx) error {
		r, _, err := tx.Load(resource, nil)
		rec = r.Clone()
		return err
	})
	if err != nil {
		return Record{}, err
	}
	if !rec.Exists() {
		return Record{}, fmt.Errorf("store: record %q: %w", resource, ErrNotFound)
	}
	return rec, nil
}

func (b *txBackend) Receipt(ctx context.Context, key ReceiptKey) (Receipt, error) {
	if err := key.Validate(); err != nil {
		return Receipt{}, err
	}
	var rc *Receipt
	err := b.s.View(ctx, func(tx Tx) error {
		rcs, err := tx.Receipts([]ReceiptKey{key})
		if err == nil && rcs[0] != nil {
			c := rcs[0].Clone()
			rc = &c
		}
		return err
	})
	if err != nil {
		return Receipt{}, err
	}
	if rc == nil {
		return Receipt{}, fmt.Errorf("store: receipt %q fence %d seq %d: %w", key.Resource, key.Fence, key.Seq, ErrNotFound)
	}
	return *rc, nil
}

// ReceiptsByOperation reads the operation's index, then the receipts it
// names; a receipt compacted in between (by a backend whose two reads are
// not one snapshot) is left out.
func (b *txBackend) ReceiptsByOperation(ctx context.Context, resource, operationID string) ([]Receipt, error) {
	if err := ValidateResource(resource); err != nil {
		return nil, err
	}
	if err := ValidateOperationID(operationID); err != nil {
		return nil, err
	}
	seq, _ := strconv.ParseUint(operationID[strings.LastIndexByte(operationID, '/')+1:], 10, 64)
	var out []Receipt
	err := b.s.View(ctx, func(tx Tx) error {
		out = nil
		fences, err := tx.OperationFences(resource, operationID)
		if err != nil || len(fences) == 0 {
			return err
		}
		slices.Sort(fences)
		keys := make([]ReceiptKey, len(fences))
		for i, f := range fences {
			keys[i] = ReceiptKey{Resource: resource, Fence: f, Seq: seq}
		}
		rcs, err := tx.Receipts(keys)
		if err != nil {
			return err
		}
		for _, rc := range rcs {
			if rc == nil {
				continue
			}
			if rc.OperationID != operationID {
				return fmt.Errorf("store: operation index of %s names receipt of %s: %w", operationID, rc.OperationID, ErrCorrupt)
			}
			out = append(out, rc.Clone())
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("store: receipts of %q op %s: %w", resource, operationID, ErrNotFound)
	}
	return out, nil
}

// ListUnknown decides at the backend's time (Tx.Now) when it has one.
func (b *txBackend) ListUnknown(ctx context.Context, now time.Time) ([]Mutation, error) {
	var out []Mutation
	err := b.s.View(ctx, func(tx Tx) error {
		out = nil
		t, err := tx.Now()
		if err != nil {
			return err
		}
		recs, err := tx.Indexed(IndexInFlight)
		if err != nil {
			return err
		}
		for _, r := range recs {
			if r.InFlight.Unsettled(at(now, t)) {
				out = append(out, *cloneMutation(r.InFlight))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (b *txBackend) ListPaused(ctx context.Context) ([]Record, error) {
	var out []Record
	err := b.s.View(ctx, func(tx Tx) error {
		out = nil
		recs, err := tx.Indexed(IndexPaused)
		if err != nil {
			return err
		}
		for _, r := range recs {
			if r.Pause != nil {
				out = append(out, r.Clone())
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (b *txBackend) ListQuarantined(ctx context.Context, resource string) ([]Quarantine, error) {
	if resource != "" {
		if err := ValidateResource(resource); err != nil {
			return nil, err
		}
	}
	var out []Quarantine
	err := b.s.View(ctx, func(tx Tx) error {
		qs, err := tx.Quarantined(resource)
		out = slices.Clone(qs)
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b Quarantine) int {
		return cmp.Or(strings.Compare(a.Resource, b.Resource), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

func (b *txBackend) Records(ctx context.Context, q RecordsQuery) ([]Record, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	var out []Record
	err := b.s.View(ctx, func(tx Tx) error {
		recs, err := tx.RecordsAfter(q.After, q.Limit)
		out = make([]Record, len(recs))
		for i, r := range recs {
			out[i] = r.Clone()
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (b *txBackend) Enforcements(ctx context.Context) ([]Enforcement, error) {
	var out []Enforcement
	err := b.s.View(ctx, func(tx Tx) error {
		es, err := tx.Enforcements()
		out = make([]Enforcement, len(es))
		for i, e := range es {
			out[i] = e.Clone()
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b Enforcement) int { return strings.Compare(a.Shape, b.Shape) })
	return out, nil
}

func (b *txBackend) TrustedKeys(ctx context.Context) ([]TrustedKey, error) {
	var out []TrustedKey
	err := b.s.View(ctx, func(tx Tx) error {
		pins, err := tx.TrustedKeys()
		out = append([]TrustedKey{}, pins...)
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b TrustedKey) int { return strings.Compare(a.Kid, b.Kid) })
	return out, nil
}

func (b *txBackend) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	err := b.s.View(ctx, func(tx Tx) error {
		var err error
		st, err = tx.Stats()
		return err
	})
	return st, err
}
