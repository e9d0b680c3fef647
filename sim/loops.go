package sim

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwk"

	"github.com/fencegate/fencegate/authn"
)

// trustReload is the sidecars' trust.reloadInterval.
const trustReload = time.Second

// startLoops starts the background loops of replica i's new process, as
// proxy.Run does in a sidecar: reconciliation every reconcile.interval,
// compaction every retention.interval, the trust bundle's reload every
// trust.reloadInterval. Each tick runs the loop's own one-pass function
// (Proxy.ReconcileOnce, Proxy.CompactOnce, Proxy.TrustOnce) as a step of
// the virtual clock, between requests, so a seed replays exactly; running
// Run's goroutines on a virtual clock would let a pass interleave with the
// event loop in an order no seed decides. A loop ends with its process (a
// crash). A loop keeps the round going only while an outcome it could
// settle is unknown; otherwise it ticks while other work is scheduled.
//
// Shortcuts that change no answer: a reconcile pass with no mutation in
// flight or unknown only refreshes gauges, so it is skipped; and trust
// reload ticks (Proxy.TrustOnce: the pins read again, the file applied
// when it changed) run only in rounds whose bundle file or pins change (a
// rotation, an added key), and a tick is skipped when its process already
// applied the file as it is and nothing changed since, for then it finds
// nothing new (a refused reload is tried again at every tick, as the
// refusal may lapse).
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
			r.res.Seen[seenEffectQuery] += n
			r.logf("sidecar replica %d: reconcile pass settled %d mutation(s) through the effect query", i, n)
		}
	}, func() bool { return cfg.EffectQuery && r.watching() })
	loop("compaction pass", cfg.Compact, func() {
		res, err := sc.p.CompactOnce(ctx)
		r.res.Seen[seenCompacted] += res.Receipts + res.Quarantine
		if err != nil || res.Receipts+res.Quarantine > 0 {
			r.logf("sidecar replica %d: compaction deleted %d receipts, %d quarantine entries (%v)", i, res.Receipts, res.Quarantine, err)
		}
	}, never)
	audited := r.now() // the process audits its store this long after its start
	loop("anchor recheck", anchorRecheck, func() {
		if r.sabotage == SabotageUnanchored {
			return
		}
		// The readiness probe (CheckLoss reads the store's generation),
		// then the anchor's own loop (Run: a recheck while lost, an audit
		// of every anchor at its interval while ready).
		_ = sc.an.CheckLoss(ctx)
		if err := sc.an.Recheck(ctx); err != nil {
			r.logf("sidecar replica %d: rechecking its store at the registry: %v", i, err)
		}
		if r.now()-audited >= anchorAudit {
			audited = r.now()
			if err := sc.an.Audit(ctx); err != nil {
				r.logf("sidecar replica %d: auditing its store against the anchors: %v", i, err)
			}
		}
	}, r.attending)
	if r.rotates {
		seen := -1 // the trust version this process last took whole
		loop("trust reload", trustReload, func() {
			if seen == r.trustVersion {
				return // neither the file nor the pins changed: nothing to do
			}
			v := r.trustVersion
			before := strings.Join(sc.p.TrustKeyIDs(), ",")
			sc.p.TrustOnce(ctx)
			if after := strings.Join(sc.p.TrustKeyIDs(), ","); after != before {
				r.res.Seen[seenReload]++
				r.logf("sidecar replica %d: trust reloaded: keys %s (were %s)", i, after, before)
			}
			if l, err := sc.p.TrustList(ctx); err == nil && l.Bundle.SHA256 == r.bundleSum {
				seen = v // the file as it is was applied (a refused one is tried again)
			}
		}, never)
	}
}

// rotate runs a step of a signing-key rotation, in the documented order
// (docs/operations.md): the bundle gains the new key and an operator pins
// it (fencegate trust accept, at the operator's sidecar: the pins are in
// the shared store, the other replicas take them at their next tick), the
// registry restarts signing with it, the bundle drops the old key (a
// reload refused while grants of the old key may still be held). Step 4
// is not a rotation: the attacker's key is added to the bundle file
// (FaultKeyAdd, story 8 of issue 19), which no one pins.
func (r *round) rotate(e event) {
	var err error
	switch e.Step {
	case 1:
		r.bundleKeys = append(r.bundleKeys, r.m.rotatedKey)
	case 2:
		r.signer = r.m.rotated
		r.reg, err = newRegistry(r.signer, r.rs, r.clk, r.rnd)
	case 3:
		r.bundleKeys = slices.DeleteFunc(r.bundleKeys, func(k jwk.Key) bool { return k == r.m.trustKey })
	case 4:
		r.bundleKeys = append(r.bundleKeys, r.m.forgerKey)
	}
	if e.Step != 2 && err == nil {
		err = r.writeBundle()
	}
	if e.Step == 1 && err == nil {
		var acc authn.TrustAccepted
		acc, err = r.sidecars[0].p.AcceptTrust(context.Background(), r.m.rotatedKey.KeyID(), "", "rotation")
		r.trustVersion++
		r.logf("operator: trust accept %s: trusted %v %s", r.m.rotatedKey.KeyID(), acc.Trusted, acc.Reload)
	}
	if err != nil {
		r.logf("rotation step %d failed: %v", e.Step, err)
	}
}

// storeSave keeps a copy of the fenced store's state (a backup, an RDB).
func (r *round) storeSave(e event) {
	if err := r.st.save(); err != nil && r.err == nil {
		r.err = err
	}
}

// storeLoss empties the fenced store, or puts back its saved state.
func (r *round) storeLoss(e event) { r.loseStore(e.Restore, "") }

func (r *round) loseStore(restore bool, when string) {
	what := "emptied (restarted without its data)"
	if restore && r.st.saved() {
		what = "put back to its saved state"
	}
	if err := r.st.lose(restore); err != nil {
		if r.err == nil {
			r.err = err
		}
		return
	}
	r.trustVersion++ // the pins went with the store
	r.lost, r.lostAt = true, r.now()
	r.res.Seen[seenStoreLoss]++
	r.logf("the fenced store is %s %s", what, when)
	if !r.lossLooking && r.sabotage != SabotageNoReconcile {
		r.lossLooking = true
		r.background(r.now()+r.sc.Config.OperatorDelay, "the operator looks at the store loss", r.lossLook)
	}
}

// handoff measures the hand-off from prev's lease to next's first write
// applied, when next is the grant right after prev's: the time next's owner spent waiting, not thinking. It is the
// wait for the grant from when the lease could be had (prev's end: its
// release reaching the registry, or its expiry; or the owner's first ask
// if later), plus the wait from the owner's first send of
// its first segment to its application. The time the owner took between
// its grant and its first write (the script's gap) is its own, not the
// hand-off's.
func (r *round) handoff(prev, next *grantInfo) {
	if next.issued != prev.issued+1 {
		// Another grant came between them (an owner that never wrote):
		// not a hand-off from prev.
		return
	}
	end, ok := r.or.endOf(prev, r.nowMs(), r.startMs())
	if !ok {
		return // not ended by now, or rewritten by a restore
	}
	if po := r.ownerNamed(prev.owner); po != nil && po.releaseSeen && po.releasedAt < end {
		// The owner gave the lease up then, whatever the registry did.
		end = po.releasedAt
	}
	if end > r.now() {
		return
	}
	o := r.ownerNamed(next.owner)
	if o == nil || !o.granted || !o.firstSent {
		return
	}
	wait := max(o.grantedAt-max(end, o.askedAt), 0) + max(r.now()-o.firstSentAt, 0)
	r.res.Handoffs = append(r.res.Handoffs, wait)
	budget := handoffBudget(o.askNet, o.firstNet, o.firstLate)
	switch {
	case o.blocked:
		// The resource was blocked by an unknown outcome: the hand-off
		// waited for its reconciliation, which the unknown bound governs.
		r.res.HandoffBlocked++
	case wait > budget:
		r.res.HandoffOver++
		what := fmt.Sprintf("hand-off from %s to %s took %s, over its budget of %s", prev.owner, o.name, wait, budget)
		r.res.Soft = append(r.res.Soft, fmt.Sprintf("at %s: %s", r.now(), what))
		r.logf("OVER BUDGET: %s", what)
	}
}

// Hand-off budget (virtual time): the next owner asks every pollInterval
// while the lease is held, so it asks again at most pollInterval after the
// lease ends; then the exchange that gets it the grant and the first send
// of its first segment take their network delays (a lost request or answer
// adds the answerTimeout after which the worker sends again, without
// network faults); a late apply (bfLate) adds its delay; and one refusal
// that makes the worker retry (RESOURCE_BUSY, REGISTRY_UNAVAILABLE,
// BACKEND_UNAVAILABLE after 200 ms; STATUS_STALE after a renewal and 50
// ms) is allowed for, handoffSlack. A hand-off whose first segment met an
// unknown outcome waits for its reconciliation instead, and is counted
// apart. The gate allows 1% of hand-offs over their budget (the p99).
const handoffSlack = 250 * time.Millisecond

func handoffBudget(ask, first netPlan, late time.Duration) time.Duration {
	exchange := func(n netPlan) time.Duration {
		d := n.ReqDelay + n.RespDelay
		if n.ReqDrop || n.RespDrop {
			d += answerTimeout
		}
		return d
	}
	return pollInterval + exchange(ask) + exchange(first) + late + handoffSlack
}

func (r *round) ownerNamed(name string) *owner {
	for _, o := range r.owners {
		if o.name == name {
			return o
		}
	}
	return nil
}

// What a round saw happen (Report.Seen): proof that the modelled parts
// ran, not invariants.
const (
	seenEffectQuery = "unknown outcomes settled by a reconcile pass (effect query)"
	seenOperator    = "unknown outcomes settled by the operator"
	seenCompacted   = "receipts and quarantine entries compacted"
	seenReload      = "trust key sets changed by a reload"
	seenSDK         = "SDK workers (client.Holder)"
	seenSDKLocal    = "writes the SDK refused locally (not holding)"
	seenLate        = "writes the backend applied after the sidecar's timeout"
	seenStoreLoss   = "fenced stores emptied or restored"
	seenConflict    = "segments resent with another payload"
)
