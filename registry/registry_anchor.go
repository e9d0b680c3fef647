package registry

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
)

// The store anchor service (anchor.go): the Registry side of the sidecars'
// anchor calls. Each is one backend step; the Registry adds the time, a
// fresh lineage candidate (used only by a data set without one), metrics
// and logs. caller is the caller's established identity: the policy
// matching fencegate.StoreResource(store) must allow it.

// RegisterStore registers a fenced store's generation (a sidecar opening
// its store). The result says whether it anchored the generation
// (Created: the registry held none, the sidecar then seeds it) or matched.
// Another generation anchored is a *StoreLostError (ErrStoreLost), with
// the result's View: the store refuses writes until an operator
// acknowledges the loss.
func (r *Registry) RegisterStore(ctx context.Context, caller, store, generation string) (RegisterStoreResult, error) {
	lineage, err := r.newLineage()
	if err != nil {
		return RegisterStoreResult{}, err
	}
	now := r.Now()
	res, err := r.opt.Backend.RegisterStore(ctx, RegisterStoreInput{Store: store, Caller: caller, Generation: generation, Lineage: lineage, Now: now})
	res.View.Now = now
	if err != nil {
		return res, err
	}
	switch {
	case res.Created:
		r.m.registrations.WithLabelValues("created").Inc()
		r.log.Info("fenced store registered: its generation is anchored", zap.String("store", store), zap.String("generation", generation), zap.String("identity", caller))
	case res.Lost:
		r.m.registrations.WithLabelValues("lost").Inc()
		r.log.Error("fenced store lost: a registration presented another generation than the anchored one; the store refuses writes until the loss is acknowledged",
			zap.String("store", store), zap.String("presented", generation), zap.String("anchored", res.View.Record.Generation), zap.String("identity", caller))
		return res, &StoreLostError{Store: store, Anchored: res.View.Record.Generation, Presented: generation}
	default:
		r.m.registrations.WithLabelValues("matched").Inc()
	}
	return res, nil
}

// Store reads a fenced store's record, enforcement ledger and number of
// anchored resources.
func (r *Registry) Store(ctx context.Context, caller, store string) (StoreView, error) {
	v, err := r.opt.Backend.Store(ctx, StoreQuery{Store: store, Caller: caller})
	v.Now = r.Now()
	return v, err
}

// Anchor decides a batch of anchor steps of a store in one backend
// transaction (DecideAnchor): the results are in the request's order. A
// generation other than the anchored one refuses the whole batch
// (*StoreLostError).
func (r *Registry) Anchor(ctx context.Context, caller, store string, req fencegate.AnchorRequest) (fencegate.AnchorResponse, error) {
	lineage, err := r.newLineage()
	if err != nil {
		return fencegate.AnchorResponse{}, err
	}
	now := r.Now()
	resp, err := r.opt.Backend.Anchor(ctx, AnchorInput{Store: store, Caller: caller, Request: req, Lineage: lineage, Now: now})
	resp.Now = now.UnixMilli()
	if err != nil {
		var lost *StoreLostError
		if errors.As(err, &lost) {
			r.log.Error("anchor request of a lost fenced store refused", zap.String("store", store),
				zap.String("presented", lost.Presented), zap.String("anchored", lost.Anchored))
		}
		return resp, err
	}
	r.m.anchorBatch.Observe(float64(len(req.Items)))
	for i, res := range resp.Results {
		op := req.Items[i].Op
		r.m.anchorSteps.WithLabelValues(string(op), string(res.Outcome)).Inc()
		if res.Outcome == fencegate.AnchorLoss {
			r.log.Error("fenced store behind its anchor: it lost data; the sidecar pauses the resource and repairs it from the anchor",
				zap.String("store", store), zap.String("resource", res.Resource), zap.String("op", string(op)),
				zap.Uint64("anchoredFence", res.Anchored.Fence), zap.Uint64("anchoredLastSeq", res.Anchored.LastSeq))
		}
	}
	return resp, nil
}

// RecordLedger records an event of a store's enforcement ledger.
func (r *Registry) RecordLedger(ctx context.Context, caller, store string, ev fencegate.LedgerBody) (StoreView, error) {
	lineage, err := r.newLineage()
	if err != nil {
		return StoreView{}, err
	}
	now := r.Now()
	v, err := r.opt.Backend.RecordLedger(ctx, LedgerInput{Store: store, Caller: caller, Event: ev, Lineage: lineage, Now: now})
	v.Now = now
	if err == nil && ev.Kind == fencegate.LedgerForcedDowngrade {
		r.log.Warn("forced downgrade recorded in a fenced store's ledger", zap.String("store", store), zap.String("shape", ev.Shape),
			zap.String("detail", ev.Detail), zap.String("identity", caller))
	}
	return v, err
}

// AcknowledgeLoss adopts generation as the store's generation after a loss
// (an admin operation: no policy check). The anchors and the ledger stay;
// every sidecar re-registers, repairs its store from them and accepts
// writes again, the repaired resources paused until resumed.
func (r *Registry) AcknowledgeLoss(ctx context.Context, store, generation string) (AcknowledgeResult, error) {
	lineage, err := r.newLineage()
	if err != nil {
		return AcknowledgeResult{}, err
	}
	res, err := r.opt.Backend.AcknowledgeLoss(ctx, AcknowledgeInput{Store: store, Generation: generation, Lineage: lineage, Now: r.Now()})
	if err != nil {
		return res, err
	}
	if res.Adopted {
		r.m.acknowledgements.Inc()
		r.log.Warn("fenced store loss acknowledged: the new generation is anchored", zap.String("store", store),
			zap.String("generation", generation), zap.String("previous", res.Previous))
	}
	return res, nil
}

// Anchors lists a page of a store's anchors, in resource order after
// after (limit 0: fencegate.DefaultAnchorPage).
func (r *Registry) Anchors(ctx context.Context, caller, store, after string, limit int) (fencegate.AnchorPage, error) {
	return r.opt.Backend.Anchors(ctx, AnchorsQuery{Store: store, Caller: caller, After: after, Limit: limit})
}
