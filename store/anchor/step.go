package anchor

import (
	"context"
	"errors"
	"fmt"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/store"
)

// send is the batcher's registry call: one AnchorRequest with the
// registered generation, bounded by Options.CallTimeout (not by the
// leader's context: the call answers every caller of the batch). A
// STORE_LOST answer makes the wrapper lost, an unknown store or another
// lineage makes it re-register and re-seed.
func (w *Store) send(ctx context.Context, items []fencegate.AnchorItem) (fencegate.AnchorResponse, error) {
	_, gen, _ := w.state()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.opt.CallTimeout)
	defer cancel()
	start := w.clk.Now()
	resp, err := w.reg.AnchorProgress(ctx, w.opt.Store, fencegate.AnchorRequest{Generation: gen, Items: items})
	w.m.latency.Observe(clock.Since(w.clk, start).Seconds())
	w.m.batch.Observe(float64(len(items)))
	switch {
	case err == nil:
		w.m.calls.WithLabelValues("ok").Inc()
	case errors.Is(err, ErrRegistryLost):
		w.m.calls.WithLabelValues("store_lost").Inc()
		w.setLost("", fmt.Errorf("an anchor request with generation %s was refused: %w", gen, err))
		return resp, err
	case errors.Is(err, ErrUnregistered):
		w.m.calls.WithLabelValues("unregistered").Inc()
		w.setReopen(err)
		return resp, err
	default:
		w.m.calls.WithLabelValues("error").Inc()
		return resp, err
	}
	for i, r := range resp.Results {
		if i < len(items) {
			w.m.steps.WithLabelValues(string(items[i].Op), string(r.Outcome)).Inc()
		}
	}
	w.mu.Lock()
	was := w.lineage
	w.mu.Unlock()
	if was != "" && resp.Lineage != was {
		w.setReopen(fmt.Errorf("the registry's lineage is %q, it was %q when this store registered: the registry was replaced", resp.Lineage, was))
	}
	return resp, nil
}

// step sends one anchor step through the batcher.
func (w *Store) step(ctx context.Context, it fencegate.AnchorItem) (fencegate.AnchorResult, error) {
	res, _, err := w.b.do(ctx, []fencegate.AnchorItem{it})
	if err != nil {
		w.m.failures.WithLabelValues(string(it.Op)).Inc()
		return fencegate.AnchorResult{}, err
	}
	return res[0], nil
}

// steps sends up to fencegate.MaxAnchorBatch steps as one submission.
func (w *Store) steps(ctx context.Context, items []fencegate.AnchorItem) ([]fencegate.AnchorResult, error) {
	res, _, err := w.b.do(ctx, items)
	if err != nil {
		for _, it := range items {
			w.m.failures.WithLabelValues(string(it.Op)).Inc()
		}
	}
	return res, err
}

// definite reports whether err says the registry refused the request as
// a whole, deciding nothing (STORE_LOST, an unknown store): unlike a
// transport error, the step was certainly not applied.
func definite(err error) bool {
	return errors.Is(err, ErrRegistryLost) || errors.Is(err, ErrUnregistered)
}

// anchorPause anchors a pause the store holds (rec). A PAUSE is always
// anchored; a failure is logged and returned.
func (w *Store) anchorPause(ctx context.Context, rec store.Record) error {
	p := store.ProgressOf(rec)
	if p.Paused == "" {
		return nil
	}
	if _, err := w.step(ctx, fencegate.AnchorItem{Resource: rec.Resource, Op: fencegate.AnchorPause, Prior: p, Next: p}); err != nil {
		w.log.Error("a pause of the store could not be anchored at the registry: if the store loses it, the loss is not caught",
			zapResource(rec.Resource), zapErr(err))
		return fmt.Errorf("store/anchor: anchor the pause of %q: %w", rec.Resource, err)
	}
	return nil
}

// withoutMarker is rec without its in-flight marker.
func withoutMarker(rec store.Record) store.Record {
	rec = rec.Clone()
	rec.InFlight = nil
	return rec
}
