package sim

import (
	"context"
	"time"
)

// trustReload is the sidecars' trust.reloadInterval.
const trustReload = time.Second

// startLoops starts the background loops of replica i's new process, as
// proxy.Run does in a sidecar: reconciliation every reconcile.interval,
// compaction every retention.interval, the trust bundle's reload every
// trust.reloadInterval. Each tick runs the loop's own one-pass function
// (Proxy.ReconcileOnce, Proxy.CompactOnce, Proxy.ReloadTrust) as a step of
// the virtual clock, between requests, so a seed replays exactly; running
// Run's goroutines on a virtual clock would let a pass interleave with the
// event loop in an order no seed decides. A loop ends with its process (a
// crash). A loop keeps the round going only while an outcome it could
// settle is unknown; otherwise it ticks while other work is scheduled.
//
// Two shortcuts that change no answer: a reconcile pass with no mutation
// in flight or unknown only refreshes gauges, so it is skipped; and trust
// reloads run only in rounds whose bundle file changes (a rotation), since
// a reload of an unchanged file changes nothing.
func (r *round) startLoops(i int) {
	sc := r.sidecars[i]
	life := sc.life
	alive := func() bool { return sc.life == life && !sc.st.dead }
	cfg := r.sc.Config
	loop := func(name string, every time.Duration, pass func(), more func() bool) {
		var tick func()
		tick = func() {
			if !alive() {
				return
			}
			pass()
			if r.pending > 0 || more() {
				r.background(r.now()+every, name, tick)
			}
		}
		r.background(r.now()+every, name, tick)
	}
	never := func() bool { return false }
	ctx := context.Background()
	loop("reconcile pass", cfg.Reconcile, func() {
		if r.sabotage == SabotageNoReconcile {
			return
		}
		if rec, err := r.st.Record(ctx, mainResource); err != nil || rec.InFlight == nil {
			return
		}
		r.cur = delivery{replica: i}
		n := sc.p.ReconcileOnce(ctx)
		r.cur = delivery{}
		if n > 0 {
			r.logf("sidecar replica %d: reconcile pass settled %d mutation(s) through the effect query", i, n)
		}
	}, func() bool { return cfg.EffectQuery && r.watching() })
	loop("compaction pass", cfg.Compact, func() {
		res, err := sc.p.CompactOnce(ctx)
		if err != nil || res.Receipts+res.Quarantine > 0 {
			r.logf("sidecar replica %d: compaction deleted %d receipts, %d quarantine entries (%v)", i, res.Receipts, res.Quarantine, err)
		}
	}, never)
	if r.rotates {
		loop("trust reload", trustReload, func() {
			changed, err := sc.p.ReloadTrust(false)
			if changed || err != nil {
				r.logf("sidecar replica %d: trust bundle reloaded: changed %v (%v), keys %v", i, changed, err, sc.p.TrustKeyIDs())
			}
		}, never)
	}
}

// rotate runs a step of a signing-key rotation, in the documented order:
// the bundle gains the new key (the sidecars' reload loop picks it up),
// the registry restarts signing with it, the bundle drops the old key
// (a reload refused while grants of the old key may still be held).
func (r *round) rotate(e event) {
	var err error
	switch e.Step {
	case 1:
		err = writeFile(r.bundle, r.m.bundleBoth)
	case 2:
		r.reg, err = newRegistry(r.m.rotated, r.rs, r.clk, r.rnd)
	case 3:
		err = writeFile(r.bundle, r.m.bundleNew)
	}
	if err != nil {
		r.logf("rotation step %d failed: %v", e.Step, err)
	}
}

// storeSave keeps a copy of the fenced store's state (a backup, an RDB).
func (r *round) storeSave(e event) {
	r.st.save()
	r.logf("fenced store state saved")
}

// storeLoss empties the fenced store, or puts back its saved state.
func (r *round) storeLoss(e event) { r.loseStore(e.Restore, "") }

func (r *round) loseStore(restore bool, when string) {
	what := "emptied (restarted without its data)"
	if restore && r.st.saved != nil {
		what = "put back to its saved state"
	}
	r.st.lose(restore)
	r.logf("the fenced store is %s %s", what, when)
}

// handoff measures the hand-off from prev's lease to next's first applied
// write (see handoffBudget).
func (r *round) handoff(prev, next *grantInfo) {
	if end, ok := r.or.endOf(prev, r.nowMs(), r.startMs()); ok && end <= r.now() {
		r.res.Handoffs = append(r.res.Handoffs, r.now()-end)
	}
}
