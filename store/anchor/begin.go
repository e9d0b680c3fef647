package anchor

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/store"
)

// Begin begins on the store and, when it PROCEEDs, anchors the step at the
// registry before answering: PROCEED only when the registry ANCHORED
// {Prior: the record the Begin read, Next: the record it wrote}. Otherwise
// nothing may be forwarded:
//   - LOSS: the store lost what the anchor holds. Begin repairs the
//     resource from the anchor (store.Store.Repair: raised, never lowered,
//     the anchored pending mutation UNKNOWN, paused STORE_LOSS; its own
//     Begin withdrawn when it raised the fence over that mutation),
//     anchors the pause and answers PAUSED (code FENCE_REGRESSION);
//   - an error: the step's outcome is unknown, so Begin asks again. Once
//     ANCHORED, it SETTLEs and aborts its marker; LOSS is the loss above;
//     LOSS with the anchor exactly this mutation is either the first call
//     having anchored it or an earlier attempt that the store lost
//     (story 2), so the marker is left to become UNKNOWN at its deadline
//     and be settled from the backend, never aborted. It answers
//     ErrNotAnchored (or ErrStoreLost);
//   - CONFLICT, or a request refused as a whole (STORE_LOST, an unknown
//     store): nothing was anchored; the marker is aborted.
//
// A Begin that paused the resource itself (FENCE_REGRESSION) anchors the
// pause. While the store is lost Begin answers ErrStoreLost without
// calling the store; while the registry is re-seeded (it forgot the store
// or was replaced), a decision that forwards nothing is answered as the
// store decided it and one that would forward is withdrawn
// (ErrNotAnchored).
func (w *Store) Begin(ctx context.Context, in store.BeginInput) (store.BeginResult, error) {
	ph, _, _ := w.state()
	if ph == phaseClosed || ph == phaseLost {
		return store.BeginResult{}, w.writable()
	}
	res, err := w.inner.Begin(ctx, in)
	if err != nil {
		w.noteInner(err)
		return res, err
	}
	switch {
	case res.Decision == store.DecisionProceed:
		if err := w.writable(); err != nil {
			// Re-seeding a registry that forgot the store: a decision
			// that forwards nothing stands, one that would is withdrawn
			// (it was neither anchored nor forwarded).
			w.abortOwn(ctx, res)
			return store.BeginResult{}, err
		}
		return w.anchorBegin(ctx, in, res)
	case res.Prior.Pause == nil && res.Record.Pause != nil:
		_ = w.anchorPause(ctx, res.Record) // logged; the answer stands
	}
	return res, nil
}

func (w *Store) anchorBegin(ctx context.Context, in store.BeginInput, res store.BeginResult) (store.BeginResult, error) {
	it := fencegate.AnchorItem{Resource: in.Resource, Op: fencegate.AnchorBegin, Prior: store.ProgressOf(res.Prior), Next: store.ProgressOf(res.Record)}
	r, err := w.step(ctx, it)
	if err != nil {
		return w.beginFailed(ctx, res, it, err)
	}
	switch r.Outcome {
	case fencegate.AnchorAnchored:
		return res, nil
	case fencegate.AnchorLoss:
		return w.beginLoss(ctx, res, r.Anchored)
	}
	// CONFLICT: Prior covered the anchor but Next does not; the anchor is
	// unchanged, so the marker was never anchored.
	w.log.Error("BUG: the registry refused a Begin's anchor step (CONFLICT); nothing forwarded", zapResource(in.Resource),
		zapProgress("prior", it.Prior), zapProgress("next", it.Next), zapProgress("anchored", r.Anchored))
	w.abortOwn(ctx, res)
	return store.BeginResult{}, fmt.Errorf("%w: the registry refused the step (CONFLICT)", ErrNotAnchored)
}

// beginFailed handles a Begin whose anchor step was not answered.
func (w *Store) beginFailed(ctx context.Context, res store.BeginResult, it fencegate.AnchorItem, first error) (store.BeginResult, error) {
	fail := fmt.Errorf("%w: %w", ErrNotAnchored, first)
	if errors.Is(first, ErrRegistryLost) {
		fail = fmt.Errorf("%w: %w", ErrStoreLost, first)
	}
	log := w.log.With(zapResource(it.Resource), zap.String("operationId", res.Mutation.OperationID))
	if definite(first) {
		w.abortOwn(ctx, res)
		return store.BeginResult{}, fail
	}
	r, err := w.step(ctx, it)
	switch {
	case err != nil:
		if definite(err) {
			w.abortOwn(ctx, res) // a repair or a seed follows before writes resume
		} else {
			log.Error("a Begin could not be anchored and its outcome at the registry is unknown: its marker is left to become UNKNOWN at its deadline (nothing was forwarded)", zapErr(first), zap.NamedError("again", err))
		}
		return store.BeginResult{}, fail
	case r.Outcome == fencegate.AnchorAnchored:
		// Anchored now: drop it again before the store withdraws it.
		s, err := w.step(ctx, fencegate.AnchorItem{Resource: it.Resource, Op: fencegate.AnchorSettle, Prior: it.Next, Next: store.ProgressOf(withoutMarker(res.Record))})
		if err == nil && s.Outcome == fencegate.AnchorAnchored {
			w.abortOwn(ctx, res)
		} else {
			log.Error("a Begin anchored late could not be settled: its marker is left to become UNKNOWN at its deadline (nothing was forwarded)", zapErr(err))
		}
		return store.BeginResult{}, fail
	case r.Outcome == fencegate.AnchorLoss && !sameProgress(r.Anchored, it.Next):
		return w.beginLoss(ctx, res, r.Anchored)
	case r.Outcome == fencegate.AnchorLoss:
		log.Warn("a Begin's anchor answer was lost and the anchor holds exactly this mutation: that call anchored it, or an earlier attempt that the store lost did; the marker is left to become UNKNOWN at its deadline and be settled from the backend (nothing was forwarded)", zapErr(first))
		return store.BeginResult{}, fail
	}
	w.abortOwn(ctx, res) // CONFLICT: not anchored
	return store.BeginResult{}, fail
}

// beginLoss repairs a resource whose store record (the Begin's Prior)
// does not cover its anchor, and answers PAUSED.
func (w *Store) beginLoss(ctx context.Context, res store.BeginResult, anchored fencegate.Progress) (store.BeginResult, error) {
	ref := res.Mutation.Ref()
	w.m.losses.WithLabelValues("begin").Inc()
	w.log.Error("fenced store LOST DATA on a resource: its record is behind what the registry anchored; nothing was forwarded, the resource is repaired from the anchor and paused (STORE_LOSS)",
		zapResource(ref.Resource), zap.String("attempt", ref.OperationID()), zapProgress("anchored", anchored), zapProgress("store", store.ProgressOf(res.Prior)))
	rep, err := w.inner.Repair(ctx, store.RepairInput{
		Resource: ref.Resource, Anchored: anchored, Now: w.now(), Window: w.opt.RepairWindow,
		Detail:   "the store was behind its anchor at the registry (data lost); found by the Begin of " + ref.OperationID(),
		Withdraw: &store.Withdrawal{Mutation: ref, Before: res.Prior},
	})
	if err != nil {
		w.noteInner(err)
		w.log.Error("repairing the resource from its anchor failed; its marker is left to become UNKNOWN at its deadline", zapResource(ref.Resource), zapErr(err))
		return store.BeginResult{}, fmt.Errorf("%w: the store lost data on %q and repairing it failed: %w", ErrNotAnchored, ref.Resource, err)
	}
	if m := rep.InFlight; m != nil && m.OpRef == ref && m.State == store.MutationInFlight {
		// The Begin's own marker, kept above the anchor: never forwarded.
		if r, err := w.inner.Abort(ctx, store.AbortInput{OpRef: ref, Now: w.now()}); err == nil {
			rep = r
		}
	}
	_ = w.anchorPause(ctx, rep)
	detail := "the store lost data on this resource"
	if rep.Pause != nil {
		detail = rep.Pause.Detail
	}
	return store.BeginResult{Decision: store.DecisionPaused, Detail: detail, Record: rep, Prior: res.Prior}, nil
}

// abortOwn withdraws the Begin's own marker, which was never anchored nor
// forwarded (a failure leaves it to become UNKNOWN at its deadline).
func (w *Store) abortOwn(ctx context.Context, res store.BeginResult) {
	if _, err := w.inner.Abort(ctx, store.AbortInput{OpRef: res.Mutation.Ref(), Now: w.now()}); err != nil {
		w.noteInner(err)
		w.log.Warn("withdrawing a marker that was never anchored failed; it becomes UNKNOWN at its deadline", zapResource(res.Mutation.Resource), zapErr(err))
	}
}

// sameProgress reports whether two progress values are equal.
func sameProgress(a, b fencegate.Progress) bool {
	pa, pb := a.Pending, b.Pending
	a.Pending, b.Pending = nil, nil
	if a != b || (pa == nil) != (pb == nil) {
		return false
	}
	return pa == nil || *pa == *pb
}
