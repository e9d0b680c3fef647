package anchor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/store"
)

// lockRecheck serialises Open and Recheck.
func (w *Store) lockRecheck() func() {
	w.openMu.Lock()
	return w.openMu.Unlock
}

// Open registers the store's generation (store.Store.Generation) at the
// registry under Options.Store and loads the registry's ledger:
//   - the registry held none (a new store, a new or replaced registry, an
//     upgrade): this generation is anchored and Open seeds the registry
//     with every record of the store (SEED, paged) and its ledger;
//   - the same generation: the store is the one anchored;
//   - another (STORE_LOST): the wrapper opens lost; every Begin answers
//     ErrStoreLost until the registry anchors the store's generation again
//     (an operator's acknowledgement) and Run has repaired the store.
//
// Options.Upgrade is taken into account first (its generation) and last
// (its checkpoints, once the store is writable). A store that can be told
// which generation to expect (store/redis: ExpectGeneration) is told the
// anchored one. Open fails when the registry cannot be asked: the
// enforcement ledger and the generation live there, and a sidecar that
// started without them could let an enforced route start unenforced.
func (w *Store) Open(ctx context.Context) error {
	defer w.lockRecheck()()
	gen, err := w.inner.Generation(ctx)
	if err != nil {
		return fmt.Errorf("store/anchor: the store's generation: %w", err)
	}
	if u := w.upgrade; u != nil && u.Generation != "" {
		if err := w.registerLegacy(ctx, u.Generation); err != nil {
			return err
		}
	}
	return w.register(ctx, gen, phaseClosed)
}

// Recheck is one attempt of a lost (or re-seeding) store to register
// again: when the registry anchors the store's generation (after an
// operator acknowledged the loss) the store is repaired from every anchor
// it is behind on (paged), and writes are accepted again. It does nothing
// for a ready store. Run calls it; tests call it directly.
func (w *Store) Recheck(ctx context.Context) error {
	defer w.lockRecheck()()
	ph, _, _ := w.state()
	if ph == phaseReady || ph == phaseClosed {
		return nil
	}
	gen, err := w.inner.Generation(ctx)
	if err != nil {
		return fmt.Errorf("store/anchor: the store's generation: %w", err)
	}
	return w.register(ctx, gen, ph)
}

// Run rechecks a lost or re-seeding store at most every
// Options.RecheckInterval until ctx ends; while the store is ready it only
// waits to be told otherwise. The loop is the caller's (the sidecar's
// Server.Run): repairing every anchored resource may take long, so it
// rides on no client request and no readiness probe.
func (w *Store) Run(ctx context.Context) error {
	for {
		if ph, _, _ := w.state(); ph == phaseReady || ph == phaseClosed {
			var audit <-chan time.Time
			var timer clock.Timer
			if ph == phaseReady && w.opt.AuditInterval > 0 {
				timer = w.clk.NewTimer(w.opt.AuditInterval)
				audit = timer.C()
			}
			select {
			case <-ctx.Done():
			case <-w.wake:
			case <-audit:
				if err := w.Audit(ctx); err != nil {
					w.log.Warn("auditing the store against its anchors failed; the next audit tries again", zapErr(err))
				}
			}
			if timer != nil {
				timer.Stop()
			}
			if ctx.Err() != nil {
				return nil
			}
			continue
		}
		if err := w.Recheck(ctx); err != nil {
			w.log.Warn("rechecking the lost store at the registry failed; writes stay refused", zapErr(err))
		}
		if ph, _, _ := w.state(); ph == phaseReady {
			continue
		}
		if !clock.Sleep(w.clk, w.opt.RecheckInterval, ctx.Done()) {
			return nil
		}
	}
}

// register registers gen, coming from phase from, and takes the wrapper to
// its next state.
func (w *Store) register(ctx context.Context, gen string, from phase) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.opt.CallTimeout)
	defer cancel()
	a, created, err := w.reg.RegisterStore(cctx, w.opt.Store, gen)
	if errors.Is(err, ErrRegistryLost) {
		view, verr := w.reg.StoreAnchor(cctx, w.opt.Store)
		if verr != nil {
			return fmt.Errorf("store/anchor: read the store at the registry: %w", verr)
		}
		w.mu.Lock()
		w.gen, w.lineage, w.ledger = gen, view.Lineage, view.Ledger
		w.mu.Unlock()
		w.setLost(gen, fmt.Errorf("the store presents generation %s, the registry anchored %s: %w", gen, view.Generation, err))
		return nil
	}
	if err != nil {
		return fmt.Errorf("store/anchor: register the store at the registry: %w", err)
	}
	if exp, ok := w.inner.(interface {
		ExpectGeneration(context.Context, string) error
	}); ok {
		if err := exp.ExpectGeneration(ctx, gen); err != nil {
			return fmt.Errorf("store/anchor: the store's generation changed while it registered: %w", err)
		}
	}
	w.mu.Lock()
	w.gen, w.lineage, w.ledger = gen, a.Lineage, a.Ledger
	if from == phaseClosed {
		// Writes stay refused until the seed or the checkpoints are done.
		w.phase, w.why = phaseReopen, errors.New("opening")
	}
	w.mu.Unlock()
	switch {
	case created:
		w.log.Info("the registry held no generation of this store: registered it and seeding the registry from the store", zap.String("generation", gen))
		if err := w.seed(ctx); err != nil {
			return err
		}
	case from == phaseLost:
		w.log.Warn("the registry anchors the store's generation again (the loss was acknowledged): repairing every resource the store is behind on", zap.String("generation", gen))
		if err := w.repairAll(ctx); err != nil {
			return err
		}
	case from == phaseReopen:
		if err := w.seed(ctx); err != nil {
			return err
		}
	}
	if err := w.upgradeCheckpoints(ctx); err != nil {
		return err
	}
	w.mu.Lock()
	w.phase, w.why, w.presented = phaseReady, nil, ""
	w.mu.Unlock()
	if from != phaseClosed {
		w.log.Warn("the fenced store accepts writes again", zap.String("generation", gen))
	}
	return nil
}

// seed sends every record of the store as a SEED (monotone: it raises the
// anchor to the record when the record covers it) and every shape the
// store's ledger enforces as an ENFORCE. A SEED answered LOSS is a loss
// only when the record read again does not cover the anchor returned (a
// Begin of another replica may have moved it meanwhile).
func (w *Store) seed(ctx context.Context) error {
	after := ""
	seeded := 0
	for {
		recs, err := w.inner.Records(ctx, store.RecordsQuery{After: after, Limit: fencegate.MaxAnchorBatch})
		if err != nil {
			return fmt.Errorf("store/anchor: seed: read records: %w", err)
		}
		var items []fencegate.AnchorItem
		for _, r := range recs {
			p := store.ProgressOf(r)
			if p == (fencegate.Progress{}) {
				continue
			}
			it := fencegate.AnchorItem{Resource: r.Resource, Op: fencegate.AnchorSeed, Prior: p, Next: p}
			if err := it.Validate(); err != nil {
				w.log.Error("a record of the store cannot be anchored (not seeded)", zapResource(r.Resource), zapErr(err))
				continue
			}
			items = append(items, it)
		}
		if len(items) > 0 {
			res, err := w.steps(ctx, items)
			if err != nil {
				return fmt.Errorf("store/anchor: seed: %w", err)
			}
			for i, r := range res {
				if r.Outcome != fencegate.AnchorAnchored {
					w.checkLoss(ctx, items[i].Resource, r.Anchored, "seed")
				}
			}
			seeded += len(items)
		}
		if len(recs) < fencegate.MaxAnchorBatch {
			break
		}
		after = recs[len(recs)-1].Resource
	}
	own, err := w.inner.Enforcements(ctx)
	if err != nil {
		return fmt.Errorf("store/anchor: seed: read the ledger: %w", err)
	}
	w.mu.Lock()
	reg := w.ledger
	w.mu.Unlock()
	for _, e := range own {
		if !e.Enforced() || enforcedIn(reg, e.Shape) {
			continue
		}
		if err := w.recordLedger(ctx, fencegate.LedgerBody{Shape: e.Shape, Kind: fencegate.LedgerEnforce, Detail: "seeded from the store's ledger"}); err != nil {
			return err
		}
	}
	w.log.Info("seeded the registry from the store", zap.Int("records", seeded))
	return nil
}

func enforcedIn(ledger []fencegate.LedgerEntry, shape string) bool {
	for _, le := range ledger {
		if le.Shape == shape {
			return le.EnforcedSince != 0
		}
	}
	return false
}

// checkLoss repairs resource when its record does not cover the anchor a
// (read again now), counting the loss as how.
func (w *Store) checkLoss(ctx context.Context, resource string, a fencegate.Progress, how string) {
	rec, err := w.inner.Record(ctx, resource)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		w.log.Error("reading a record to check it against its anchor failed", zapResource(resource), zapErr(err))
		return
	}
	if store.ProgressOf(rec).Covers(a) {
		return
	}
	w.m.losses.WithLabelValues(how).Inc()
	w.log.Error("fenced store LOST DATA on a resource: its record is behind what the registry anchored; repaired from the anchor and paused (STORE_LOSS)",
		zapResource(resource), zap.String("found", how), zapProgress("anchored", a), zapProgress("store", store.ProgressOf(rec)))
	w.repairPause(ctx, resource, a, "the store was behind its anchor at the registry (data lost); found by "+how)
}

// Audit checks a ready store against every anchor of it, paged: a
// resource whose record does not cover its anchor lost data (a store put
// back to an older save, on a resource no write has touched since) and is
// repaired from the anchor and paused, as a Begin would have found it. A
// record and an anchor read apart may both have moved between the two
// reads, so a suspected loss is confirmed at the registry by a SEED of the
// record (LOSS there, and the record read again not covering the anchor
// returned) before anything is repaired. Run audits every
// Options.AuditInterval; it does nothing unless the store is ready.
func (w *Store) Audit(ctx context.Context) error {
	defer w.lockRecheck()()
	if ph, _, _ := w.state(); ph != phaseReady {
		return nil
	}
	return w.eachAnchor(ctx, func(resource string, a fencegate.Progress) {
		rec, err := w.inner.Record(ctx, resource)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			w.noteInner(err)
			return
		}
		if store.ProgressOf(rec).Covers(a) {
			return
		}
		r, err := w.step(ctx, fencegate.AnchorItem{Resource: resource, Op: fencegate.AnchorSeed, Prior: store.ProgressOf(rec), Next: store.ProgressOf(rec)})
		if err != nil || r.Outcome != fencegate.AnchorLoss {
			return // not answered (the next audit asks again), or covered now
		}
		w.checkLoss(ctx, resource, r.Anchored, "audit")
	})
}

// repairAll pages every anchor of the store and repairs each resource
// whose record does not cover it.
func (w *Store) repairAll(ctx context.Context) error {
	return w.eachAnchor(ctx, func(resource string, a fencegate.Progress) { w.checkLoss(ctx, resource, a, "repair") })
}

// eachAnchor calls fn with every anchor of the store, paged.
func (w *Store) eachAnchor(ctx context.Context, fn func(resource string, a fencegate.Progress)) error {
	after := ""
	for {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.opt.CallTimeout)
		page, err := w.reg.StoreAnchors(cctx, w.opt.Store, after, fencegate.MaxAnchorPage)
		cancel()
		if err != nil {
			return fmt.Errorf("store/anchor: page the anchors: %w", err)
		}
		for _, ra := range page.Anchors {
			fn(ra.Resource, ra.Anchored)
		}
		if page.Next == "" {
			return nil
		}
		after = page.Next
	}
}

// registerLegacy registers the generation an earlier version recorded on
// the pod, when the registry holds none yet, so that the store's own
// generation registered next is compared with it.
func (w *Store) registerLegacy(ctx context.Context, legacy string) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.opt.CallTimeout)
	defer cancel()
	v, err := w.reg.StoreAnchor(cctx, w.opt.Store)
	if err != nil {
		return fmt.Errorf("store/anchor: read the store at the registry: %w", err)
	}
	switch {
	case v.Generation == "":
		if _, _, err := w.reg.RegisterStore(cctx, w.opt.Store, legacy); err != nil && !errors.Is(err, ErrRegistryLost) {
			return fmt.Errorf("store/anchor: register the generation recorded before the upgrade: %w", err)
		}
		w.log.Info("registered the store generation this sidecar recorded before the upgrade", zap.String("generation", legacy))
	case v.Generation != legacy:
		w.log.Error("the store generation this sidecar recorded before the upgrade is not the one the registry anchored: the store lost data before another sidecar registered it; the checkpoints of this sidecar decide which resources are behind",
			zap.String("recorded", legacy), zap.String("anchored", v.Generation))
	}
	return nil
}

// upgradeCheckpoints takes the checkpoints of an earlier version into
// account once (see Upgrade), then calls Upgrade.Done.
func (w *Store) upgradeCheckpoints(ctx context.Context) error {
	u := w.upgrade
	if u == nil {
		return nil
	}
	for _, cp := range u.Checkpoints {
		if err := w.checkpoint(ctx, cp); err != nil {
			return err
		}
	}
	if u.Done != nil {
		if err := u.Done(); err != nil {
			return fmt.Errorf("store/anchor: upgrade: %w", err)
		}
	}
	w.upgrade = nil
	return nil
}

// checkpoint compares one checkpoint with the store's record (the rules
// of the earlier store/guard) and, when the record does not show what the
// checkpoint saw, anchors the segments it can name or pauses the resource.
func (w *Store) checkpoint(ctx context.Context, cp Checkpoint) error {
	rec, err := w.inner.Record(ctx, cp.Resource)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("store/anchor: upgrade: read %q: %w", cp.Resource, err)
	}
	why := behind(cp, rec)
	if why == "" {
		return nil
	}
	w.m.losses.WithLabelValues("checkpoint").Inc()
	w.log.Error("fenced store LOST DATA before the upgrade: its record is behind this sidecar's checkpoint", zapResource(cp.Resource), zap.String("why", why))
	if rec.Exists() && rec.Root != "" && rec.HighestFence == cp.Fence && cp.Seq > rec.LastSeq && cp.UnknownSeq == 0 {
		p := store.ProgressOf(withoutMarker(rec))
		p.LastSeq = cp.Seq
		r, err := w.step(ctx, fencegate.AnchorItem{Resource: cp.Resource, Op: fencegate.AnchorSeed, Prior: p, Next: p})
		if err != nil {
			return fmt.Errorf("store/anchor: upgrade: anchor the checkpoint of %q: %w", cp.Resource, err)
		}
		w.repairPause(ctx, cp.Resource, r.Anchored, "the store was behind this sidecar's checkpoint of an earlier version: "+why)
		return nil
	}
	if _, err := w.Pause(ctx, store.PauseInput{Resource: cp.Resource, Reason: store.PauseFenceRegression, Detail: why, Now: w.now()}); err != nil {
		return fmt.Errorf("store/anchor: upgrade: pause %q: %w", cp.Resource, err)
	}
	return nil
}

// behind describes how rec falls short of cp ("" when it does not), by the
// rules of the earlier store/guard.
func behind(cp Checkpoint, rec store.Record) string {
	pre := fmt.Sprintf("store lost data: local checkpoint of an earlier version (fence %d, segment %d", cp.Fence, cp.Seq)
	if cp.UnknownSeq != 0 {
		pre += fmt.Sprintf(", UNKNOWN mutation fence %d segment %d outstanding", cp.UnknownFence, cp.UnknownSeq)
	}
	pre += ")"
	m := rec.InFlight
	switch {
	case cp.Fence == 0 && cp.UnknownSeq == 0:
		return ""
	case !rec.Exists():
		return pre + ", the store has no record"
	case rec.HighestFence < cp.Fence:
		return fmt.Sprintf("%s, the store's highest fence is %d", pre, rec.HighestFence)
	case rec.HighestFence == cp.Fence && rec.LastSeq < cp.Seq:
		return fmt.Sprintf("%s, the store's last segment is %d", pre, rec.LastSeq)
	case cp.UnknownSeq != 0 && !(rec.HighestFence > cp.UnknownFence || rec.HighestFence == cp.UnknownFence && rec.LastSeq >= cp.UnknownSeq) &&
		!(m != nil && m.Fence == cp.UnknownFence && m.Seq == cp.UnknownSeq):
		return pre + ", the store has no such mutation in flight"
	}
	return ""
}
