package anchor

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/store"
)

// The writes that weaken what the store holds: the anchor first (SETTLE,
// RESUME), then the store; if the anchor step fails the store is not
// touched (fail closed: a marker becomes UNKNOWN at its deadline, a pause
// stays). The writes that strengthen it: the store first, then the anchor
// (PAUSE, Repair). Commit, MarkUnknown and Resolve as applied only move
// the store forward and need no anchor step.

// Abort withdraws a marker proven never sent: the anchor drops it first
// (SETTLE). A marker the Abort would not clear (another, a retried one,
// which returns to UNKNOWN, or one declared unknown) goes straight to the
// store, which keeps or refuses it.
func (w *Store) Abort(ctx context.Context, in store.AbortInput) (store.Record, error) {
	rec, ok, err := w.marker(ctx, in.OpRef)
	if err != nil {
		return store.Record{}, err
	}
	if m := rec.InFlight; !ok || m.Attempts > 1 || m.State == store.MutationUnknown && m.Cause != store.CauseDeadline {
		r, err := w.inner.Abort(ctx, in)
		w.noteInner(err)
		return r, err
	}
	if err := w.settle(ctx, rec); err != nil {
		return store.Record{}, err
	}
	r, err := w.inner.Abort(ctx, in)
	w.noteInner(err)
	return r, err
}

// Resolve settles an unknown mutation: as applied straight in the store
// (it moves forward), as not applied after the anchor dropped it (SETTLE).
func (w *Store) Resolve(ctx context.Context, in store.ResolveInput) (store.ResolveResult, error) {
	var settled *store.Record // the record whose marker the anchor dropped
	if !in.Applied {
		rec, ok, err := w.marker(ctx, in.OpRef)
		if err != nil {
			return store.ResolveResult{}, err
		}
		if ok && rec.InFlight.Unsettled(in.Now) {
			if err := w.settle(ctx, rec); err != nil {
				return store.ResolveResult{}, err
			}
			settled = &rec
		}
	}
	r, err := w.inner.Resolve(ctx, in)
	if settled != nil && errors.Is(err, store.ErrNotQuiet) {
		// The store kept the marker (the backend may still apply it):
		// the anchor must hold it again, or a store put back to an older
		// save would not be caught.
		w.reanchor(ctx, *settled)
	}
	w.noteInner(err)
	return r, err
}

// reanchor anchors rec's marker again after a SETTLE whose store write was
// refused (a BEGIN from rec without it to rec). A failure is logged: the
// anchor then holds less than the store until the marker's next anchor
// step, and a loss of the store meanwhile may go unseen.
func (w *Store) reanchor(ctx context.Context, rec store.Record) {
	it := fencegate.AnchorItem{Resource: rec.Resource, Op: fencegate.AnchorBegin, Prior: store.ProgressOf(withoutMarker(rec)), Next: store.ProgressOf(rec)}
	r, err := w.step(ctx, it)
	if err == nil && r.Outcome == fencegate.AnchorAnchored {
		return
	}
	w.log.Error("a mutation the store refused to settle (not quiet yet) could not be anchored again: a loss of the store before its next anchor step may go unseen",
		zapResource(rec.Resource), zap.String("operationId", rec.InFlight.OperationID), zap.String("outcome", string(r.Outcome)), zapErr(err))
}

// marker reads ref's resource and reports whether its marker is ref's.
func (w *Store) marker(ctx context.Context, ref store.OpRef) (store.Record, bool, error) {
	rec, err := w.inner.Record(ctx, ref.Resource)
	if errors.Is(err, store.ErrNotFound) {
		return store.Record{}, false, nil
	}
	if err != nil {
		w.noteInner(err)
		return store.Record{}, false, err
	}
	m := rec.InFlight
	return rec, m != nil && m.OpRef == ref, nil
}

// settle drops rec's marker from the anchor (SETTLE {Prior: rec, Next: rec
// without it}) before the store withdraws it. A CONFLICT whose anchor
// holds a pending mutation of a lower fence (the marker's Begin raised the
// fence and was never anchored) is answered by proving that mutation
// committed from the store's receipt (a SEED of it committed) and asking
// again; a pause written since is read again once. Anything else refuses,
// and when the store holds no trace of the anchored mutation it may have
// lost it: the resource is repaired (paused) and the loss counted.
func (w *Store) settle(ctx context.Context, rec store.Record) error {
	ref := rec.InFlight.OpRef
	for round := 0; ; round++ {
		it := fencegate.AnchorItem{Resource: rec.Resource, Op: fencegate.AnchorSettle, Prior: store.ProgressOf(rec), Next: store.ProgressOf(withoutMarker(rec))}
		r, err := w.step(ctx, it)
		if err != nil {
			return fmt.Errorf("%w: SETTLE of %s: %w", ErrSettleRefused, rec.InFlight.OperationID, err)
		}
		if r.Outcome == fencegate.AnchorAnchored {
			return nil
		}
		a := r.Anchored
		if round > 0 {
			return w.settleRefused(ctx, rec, a)
		}
		switch {
		case a.Pending != nil && a.Fence < it.Next.Fence:
			if err := w.proveCommitted(ctx, rec.Resource, a); err != nil {
				w.m.losses.WithLabelValues("settle").Inc()
				w.log.Error("fenced store may have LOST DATA: the anchor holds a mutation of a lower fence that this store has no receipt of, under a fence raised by a Begin that was never anchored; the settle is refused and the resource paused",
					zapResource(rec.Resource), zapProgress("anchored", a), zapProgress("store", it.Prior), zapErr(err))
				w.repairPause(ctx, rec.Resource, a, "the anchor holds mutation "+fencegate.OperationID(a.Root, a.Pending.Seq)+
					" that this store has no receipt of (it may have lost it, and it may still reach the backend)")
				return w.settleRefused(ctx, rec, a)
			}
		case a.Paused != "" && it.Next.Paused == "":
			again, err := w.inner.Record(ctx, rec.Resource)
			if err != nil || again.InFlight == nil || again.InFlight.OpRef != ref {
				return w.settleRefused(ctx, rec, a)
			}
			rec = again
		case !store.ProgressOf(rec).Covers(a):
			// The store is behind its anchor (put back to an older save
			// since the anchor moved on): a loss, found here because no
			// Begin came first. Repaired from the anchor (what it holds
			// pending comes back UNKNOWN, the fence raised, paused); the
			// marker being settled is one the anchor already dropped.
			w.m.losses.WithLabelValues("settle").Inc()
			w.log.Error("fenced store LOST DATA on a resource: its record is behind what the registry anchored; the settle is refused, the resource is repaired from the anchor and paused (STORE_LOSS)",
				zapResource(rec.Resource), zapProgress("anchored", a), zapProgress("store", it.Prior))
			w.repairPause(ctx, rec.Resource, a, "the store was behind its anchor at the registry (data lost); found settling "+rec.InFlight.OperationID)
			return w.settleRefused(ctx, rec, a)
		default:
			return w.settleRefused(ctx, rec, a)
		}
	}
}

func (w *Store) settleRefused(ctx context.Context, rec store.Record, a fencegate.Progress) error {
	op := ""
	if rec.InFlight != nil {
		op = rec.InFlight.OperationID
	}
	w.log.Error("the registry refused to drop a mutation from the anchor (CONFLICT): the store is not changed", zapResource(rec.Resource),
		zap.String("operationId", op), zapProgress("anchored", a), zapProgress("store", store.ProgressOf(rec)))
	return fmt.Errorf("%w: SETTLE of %s on %q: CONFLICT with the anchored fence %d", ErrSettleRefused, op, rec.Resource, a.Fence)
}

// proveCommitted shows the registry that the anchored pending mutation of
// a was committed: a SEED of a with that segment committed. The proof is
// the store's receipt of it or, once compaction deleted that receipt, the
// record's Superseded progress when the anchored fence is the one the
// record's highest fence took over from, committed through that segment
// (a registry restored from a copy older than the Begin that raised the
// fence leaves exactly this).
func (w *Store) proveCommitted(ctx context.Context, resource string, a fencegate.Progress) error {
	rc, err := w.inner.Receipt(ctx, store.ReceiptKey{Resource: resource, Fence: a.Fence, Seq: a.Pending.Seq})
	if err != nil {
		rec, rerr := w.inner.Record(ctx, resource)
		if sup := rec.Superseded; rerr != nil || sup.Fence != a.Fence || sup.Root != a.Root || sup.LastSeq < a.Pending.Seq {
			return fmt.Errorf("receipt of %s: %w (and the record does not show it committed under the fence it superseded)", fencegate.OperationID(a.Root, a.Pending.Seq), err)
		}
	} else if rc.Root != a.Root || rc.PayloadDigest != a.Pending.PayloadDigest {
		return fmt.Errorf("the receipt of fence %d segment %d is of root %s, payload %s", a.Fence, a.Pending.Seq, rc.Root, rc.PayloadDigest)
	}
	next := a
	next.Pending, next.LastSeq = nil, a.Pending.Seq
	r, err := w.step(ctx, fencegate.AnchorItem{Resource: resource, Op: fencegate.AnchorSeed, Prior: next, Next: next})
	if err != nil {
		return err
	}
	if r.Outcome != fencegate.AnchorAnchored {
		return fmt.Errorf("SEED of the committed segment answered %s", r.Outcome)
	}
	return nil
}

// repairPause repairs resource from the anchor a (which pauses it) and
// anchors the pause; failures are logged.
func (w *Store) repairPause(ctx context.Context, resource string, a fencegate.Progress, detail string) {
	rep, err := w.inner.Repair(ctx, store.RepairInput{Resource: resource, Anchored: a, Detail: detail, Now: w.now(), Window: w.opt.RepairWindow})
	if err != nil {
		w.noteInner(err)
		w.log.Error("repairing a resource from its anchor failed", zapResource(resource), zapErr(err))
		return
	}
	_ = w.anchorPause(ctx, rep)
}

// Pause pauses in the store, then anchors the pause. A failure to anchor
// it is returned (the store stays paused; repeat the call).
func (w *Store) Pause(ctx context.Context, in store.PauseInput) (store.Record, error) {
	rec, err := w.inner.Pause(ctx, in)
	if err != nil {
		w.noteInner(err)
		return rec, err
	}
	return rec, w.anchorPause(ctx, rec)
}

// Resume drops the pause from the anchor (RESUME), then resumes in the
// store; if the anchor step fails the resource stays paused.
func (w *Store) Resume(ctx context.Context, resource string) (store.Record, error) {
	rec, err := w.inner.Record(ctx, resource)
	if err == nil && rec.Pause != nil {
		next := rec.Clone()
		next.Pause = nil
		if _, err := w.step(ctx, fencegate.AnchorItem{Resource: resource, Op: fencegate.AnchorResume, Prior: store.ProgressOf(rec), Next: store.ProgressOf(next)}); err != nil {
			return store.Record{}, fmt.Errorf("%w: RESUME of %q: %w", ErrSettleRefused, resource, err)
		}
	}
	r, err := w.inner.Resume(ctx, resource)
	w.noteInner(err)
	return r, err
}

// Repair repairs in the store, then anchors the pause it writes.
func (w *Store) Repair(ctx context.Context, in store.RepairInput) (store.Record, error) {
	rec, err := w.inner.Repair(ctx, in)
	if err != nil {
		w.noteInner(err)
		return rec, err
	}
	return rec, w.anchorPause(ctx, rec)
}
