package anchor

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/store"
)

// The enforcement ledger lives in the store and at the registry, so a
// store without its ledger (a deleted bbolt file, an emptied Redis, a new
// store) still refuses a downgrade: an ENFORCE is recorded in the store,
// then at the registry; a FORCED_DOWNGRADE at the registry first, then in
// the store; and the ledger the sidecar checks is the union (a shape is
// enforced if either says so).

// Enforcements returns the union of the store's ledger and the registry's
// (as read at Open and after every ledger write), by shape.
func (w *Store) Enforcements(ctx context.Context) ([]store.Enforcement, error) {
	w.mu.Lock()
	ph, reg := w.phase, w.ledger
	w.mu.Unlock()
	if ph == phaseClosed {
		return nil, ErrNotOpen
	}
	own, err := w.inner.Enforcements(ctx)
	if err != nil {
		w.noteInner(err)
		return nil, err
	}
	by := make(map[string]store.Enforcement, len(own)+len(reg))
	for _, e := range own {
		by[e.Shape] = e
	}
	for _, le := range reg {
		if e, ok := by[le.Shape]; ok && (e.Enforced() || le.EnforcedSince == 0) {
			continue
		}
		by[le.Shape] = fromLedger(le)
	}
	out := make([]store.Enforcement, 0, len(by))
	for _, e := range by {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b store.Enforcement) int { return strings.Compare(a.Shape, b.Shape) })
	return out, nil
}

// fromLedger is a registry ledger entry as a store ledger entry.
func fromLedger(le fencegate.LedgerEntry) store.Enforcement {
	e := store.Enforcement{Shape: le.Shape}
	if le.EnforcedSince != 0 {
		e.EnforcedSince = time.UnixMilli(le.EnforcedSince).UTC()
	}
	for _, ev := range le.History {
		e.History = append(e.History, store.EnforcementEvent{At: time.UnixMilli(ev.At).UTC(), Kind: ev.Kind, Detail: ev.Detail})
	}
	return e
}

// RecordEnforcement records an ENFORCE in the store, then at the
// registry; a FORCED_DOWNGRADE at the registry, then in the store. A
// failure at the registry is returned (an ENFORCE then stands in the
// store only; a downgrade is not made).
func (w *Store) RecordEnforcement(ctx context.Context, in store.EnforcementInput) (store.Enforcement, error) {
	if err := in.Validate(); err != nil {
		return store.Enforcement{}, err
	}
	ev := fencegate.LedgerBody{Shape: in.Shape, Kind: in.Kind, Detail: in.Detail}
	if in.Kind == store.EnforcementForcedDowngrade {
		if err := w.recordLedger(ctx, ev); err != nil {
			return store.Enforcement{}, err
		}
		e, err := w.inner.RecordEnforcement(ctx, in)
		w.noteInner(err)
		return e, err
	}
	e, err := w.inner.RecordEnforcement(ctx, in)
	if err != nil {
		w.noteInner(err)
		return e, err
	}
	return e, w.recordLedger(ctx, ev)
}

func (w *Store) recordLedger(ctx context.Context, ev fencegate.LedgerBody) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.opt.CallTimeout)
	defer cancel()
	a, err := w.reg.RecordLedger(ctx, w.opt.Store, ev)
	if err != nil {
		return fmt.Errorf("store/anchor: record %s of %q at the registry: %w", ev.Kind, ev.Shape, err)
	}
	w.mu.Lock()
	w.ledger = a.Ledger
	w.mu.Unlock()
	return nil
}
