package registry

import (
	"context"
	"fmt"

	"github.com/fencegate/fencegate"
)

// The store anchor operations of txBackend: load the snapshot, decide,
// write the change, in one transaction, like every other operation.

// storeParts says what loadStore reads besides the record and the policy.
type storeParts struct{ ledger, count bool }

// loadStore reads a StoreSnapshot of store. The meta is read whole only
// when the lineage is not set yet (Tx.Lineage).
func loadStore(tx Tx, store string, parts storeParts) (StoreSnapshot, error) {
	var s StoreSnapshot
	lin, err := tx.Lineage()
	if err != nil {
		return s, err
	}
	if lin != "" {
		s.Meta = Meta{Lineage: lin}
	} else if s.Meta, err = tx.Meta(); err != nil {
		return s, err
	}
	if s.Policy, err = loadPolicy(tx, fencegate.StoreResource(store)); err != nil {
		return s, err
	}
	rec, found, err := tx.StoreRecord(store)
	if err != nil {
		return s, err
	}
	if found {
		s.Store = &rec
	}
	if parts.ledger {
		if s.Ledger, err = tx.Ledger(store); err != nil {
			return s, err
		}
	}
	if parts.count {
		if s.Resources, err = tx.AnchorCount(store); err != nil {
			return s, err
		}
	}
	return s, nil
}

// validStore refuses a malformed store name before any key is derived
// from it.
func validStore(store string) error {
	if err := fencegate.ValidateStoreName(store); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidInput, err)
	}
	return nil
}

func (b txBackend) RegisterStore(ctx context.Context, in RegisterStoreInput) (RegisterStoreResult, error) {
	if err := validStore(in.Store); err != nil {
		return RegisterStoreResult{}, err
	}
	var res RegisterStoreResult
	err := b.decide(ctx, func(tx Tx) (Change, error) {
		snap, err := loadStore(tx, in.Store, storeParts{ledger: true, count: true})
		if err != nil {
			return Change{}, err
		}
		var ch Change
		res, ch, err = DecideRegisterStore(snap, in)
		return ch, err
	})
	return res, err
}

func (b txBackend) Store(ctx context.Context, q StoreQuery) (StoreView, error) {
	if err := validStore(q.Store); err != nil {
		return StoreView{}, err
	}
	var v StoreView
	err := b.read(ctx, func(tx Tx) error {
		snap, err := loadStore(tx, q.Store, storeParts{ledger: true, count: true})
		if err != nil {
			return err
		}
		v, err = DecideStore(snap, q)
		return err
	})
	return v, err
}

func (b txBackend) Anchor(ctx context.Context, in AnchorInput) (fencegate.AnchorResponse, error) {
	if err := validStore(in.Store); err != nil {
		return fencegate.AnchorResponse{}, err
	}
	if err := in.Request.Validate(); err != nil {
		return fencegate.AnchorResponse{}, fmt.Errorf("%w: %w", ErrInvalidInput, err)
	}
	resources := make([]string, 0, len(in.Request.Items))
	seen := make(map[string]bool, len(in.Request.Items))
	for _, it := range in.Request.Items {
		if !seen[it.Resource] {
			seen[it.Resource] = true
			resources = append(resources, it.Resource)
		}
	}
	var resp fencegate.AnchorResponse
	err := b.decide(ctx, func(tx Tx) (Change, error) {
		var snap AnchorSnapshot
		var err error
		if snap.StoreSnapshot, err = loadStore(tx, in.Store, storeParts{}); err != nil {
			return Change{}, err
		}
		if snap.Anchors, err = tx.Anchors(in.Store, resources); err != nil {
			return Change{}, err
		}
		var ch Change
		resp, ch, err = DecideAnchor(snap, in)
		return ch, err
	})
	return resp, err
}

func (b txBackend) RecordLedger(ctx context.Context, in LedgerInput) (StoreView, error) {
	if err := validStore(in.Store); err != nil {
		return StoreView{}, err
	}
	var v StoreView
	err := b.decide(ctx, func(tx Tx) (Change, error) {
		snap, err := loadStore(tx, in.Store, storeParts{ledger: true, count: true})
		if err != nil {
			return Change{}, err
		}
		var ch Change
		v, ch, err = DecideLedger(snap, in)
		return ch, err
	})
	return v, err
}

func (b txBackend) AcknowledgeLoss(ctx context.Context, in AcknowledgeInput) (AcknowledgeResult, error) {
	if err := validStore(in.Store); err != nil {
		return AcknowledgeResult{}, err
	}
	var v AcknowledgeResult
	err := b.decide(ctx, func(tx Tx) (Change, error) {
		snap, err := loadStore(tx, in.Store, storeParts{ledger: true, count: true})
		if err != nil {
			return Change{}, err
		}
		var ch Change
		v, ch, err = DecideAcknowledge(snap, in)
		return ch, err
	})
	return v, err
}

func (b txBackend) Anchors(ctx context.Context, q AnchorsQuery) (fencegate.AnchorPage, error) {
	if err := q.Validate(); err != nil {
		return fencegate.AnchorPage{}, err
	}
	var page fencegate.AnchorPage
	err := b.read(ctx, func(tx Tx) error {
		var snap AnchorsSnapshot
		var err error
		if snap.StoreSnapshot, err = loadStore(tx, q.Store, storeParts{}); err != nil {
			return err
		}
		if snap.Rows, err = tx.AnchorsAfter(q.Store, q.After, q.PageLimit()+1); err != nil {
			return err
		}
		page, err = DecideAnchors(snap, q)
		return err
	})
	return page, err
}
