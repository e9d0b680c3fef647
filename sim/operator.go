package sim

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/store"
)

// The operator knows only what a real one can learn: the sidecar's list of
// unknown mutations (fencegate receipts --unknown) and, where the backend
// offers one (roundConfig.Effects), its effect query, which it asks as a
// person would look at the backend's data, and settles by what it answers
// (fencegate reconcile --applied or --not-applied, design section 8 step
// 4). It never reads the backend's hidden state: a write the backend
// received and will apply later is "not found" to it, as it would be to a
// person. Where the backend offers nothing, the operator cannot tell, and
// the mutation stays UNKNOWN until a worker's idempotent retry settles it,
// or for ever. It also recovers from a registry restore as section 10
// says.

// Operator timing (virtual time).
const (
	// operatorAgain: while an outcome it can ask about stays unknown (its
	// evidence was refused, or the marker was still in flight), the
	// operator looks again this often.
	operatorAgain = time.Minute
	// unknownWatch is how long after an outcome became unknown the round
	// keeps running the background (reconcile passes, the operator) to
	// settle it: past the 15-minute budget, so a settleable outcome left
	// unknown fails the gate.
	unknownWatch = MaxUnknownBudget + time.Minute
)

// trackUnknown follows the main resource's unknown outcome after every
// step: a marker left in the store at the end of a step is a mutation
// whose outcome no sidecar knows (every request is served within one
// step), until the marker is gone or another one replaces it.
func (r *round) trackUnknown() {
	rec, err := r.st.Record(context.Background(), mainResource)
	op := ""
	if err == nil && rec.InFlight != nil {
		op = rec.InFlight.OperationID
	}
	if r.unk != nil && r.unk.op != op {
		d := r.now() - r.unk.since
		r.logf("unknown outcome of %s settled after %s", r.unk.op, d)
		r.unknownTime(r.unk.op, d, "settled")
		r.unk = nil
	}
	if op != "" && r.unk == nil {
		r.unk = &unknownEpisode{op: op, since: r.now()}
		r.res.Unknowns++
		r.logf("outcome of %s unknown (%s)", op, rec.InFlight.State)
		if !r.looking && r.sabotage != SabotageNoReconcile {
			r.looking = true
			r.background(r.now()+r.sc.Config.OperatorDelay, "the operator looks", r.look)
		}
	}
}

// unknownTime accounts for d in UNKNOWN of op: over the budget breaks the
// bound.
func (r *round) unknownTime(op string, d time.Duration, how string) {
	r.res.MaxUnknown = max(r.res.MaxUnknown, d)
	if d > MaxUnknownBudget {
		r.violate(&r.res.UnknownOver, fmt.Sprintf("%s was UNKNOWN for %s (%s), over the %s budget", op, d, how, MaxUnknownBudget))
	}
}

// watching reports whether the background should keep running for the
// unknown outcome: there is one, and its watch has not run out.
func (r *round) watching() bool { return r.unk != nil && r.now() < r.unk.since+unknownWatch }

// look is the operator answering the page about unknown outcomes.
func (r *round) look() {
	r.looking = false
	if r.unk == nil {
		return
	}
	ctx := context.Background()
	p := r.sidecars[0].p
	list, err := p.Unknown(ctx)
	if err != nil {
		r.logf("operator: listing unknown mutations failed: %v", err)
	}
	for _, m := range list {
		if !r.sc.Config.Effects {
			r.logf("operator: cannot tell whether %s took effect: the backend offers no way to ask", m.OperationID)
			continue
		}
		applied, body := r.back.effect(m.OperationID)
		if _, err := p.Reconcile(ctx, m.Resource, m.OperationID, applied, http.StatusCreated, body); err != nil {
			r.logf("operator: reconcile %s as applied=%v: %v", m.OperationID, applied, err)
			if nq := (*store.NotQuietError)(nil); errors.As(err, &nq) && !r.looking && r.watching() {
				// The backend may still apply it: the sidecar refuses "not
				// applied" before the quiet time. Look again then.
				r.looking = true
				r.background(nq.QuietAt.Sub(r.start)+time.Millisecond, "the operator looks at the quiet time", r.look)
			}
			continue
		}
		r.res.Seen[seenOperator]++
		r.logf("operator: the backend says %s applied=%v; reconciled so", m.OperationID, applied)
	}
	r.trackUnknown()
	if !r.looking && r.sc.Config.Effects && r.watching() {
		r.looking = true
		r.background(r.now()+operatorAgain, "the operator looks again", r.look)
	}
}

func (r *round) snapshot(e event) {
	if err := r.rs.save(); err != nil {
		r.fail(err)
		return
	}
	r.saved = true
	r.or.snapshot()
	r.logf("%s: registry state saved", e)
}

// restore puts the registry back to its snapshot; a second later the
// operator recovers: epoch bump, fence floor above every accepted fence,
// resume of the paused resource. A registry on etcd has met a restore
// that set it back below what it had seen by itself meanwhile, at its
// first call (registry/etcd's watermark: an epoch bump and a fence floor
// before anything else is decided); the operator's steps only raise
// further.
func (r *round) restore(e event) {
	if !r.saved {
		return
	}
	if err := r.rs.putBack(); err != nil {
		r.fail(err)
		return
	}
	r.or.restore(r.now())
	r.logf("%s: registry restored to its snapshot", e)
	r.after(time.Second, "operator recovers from the restore", func() {
		ctx := context.Background()
		if n := r.rs.restores(); n > r.restoresMet {
			r.restoresMet = n
			r.logf("registry: met the restore by itself (epoch bump and fence floor before anything else was decided)")
		}
		meta, err := r.reg.BumpEpoch(ctx)
		if err != nil {
			r.logf("operator: bump: %v", err)
			return
		}
		r.or.bump(meta.IssuerEpoch, r.now())
		rec, err := r.st.Record(ctx, mainResource)
		if err == nil {
			if _, _, err := r.reg.RaiseFenceFloor(ctx, mainResource, rec.HighestFence); err != nil {
				r.logf("operator: floor: %v", err)
			}
			if rec.Pause != nil {
				if _, err := r.sidecars[0].p.Resume(ctx, mainResource); err != nil {
					r.logf("operator: resume: %v", err)
				}
			}
		}
		r.logf("operator: epoch %d, fence floor %d, resumed", meta.IssuerEpoch, rec.HighestFence)
	})
}

// noteReceipt records a receipt a sidecar stored (Commit, or Resolve as
// applied), for the end-of-round comparison with the backend.
func (r *round) noteReceipt(rc store.Receipt) {
	if rc.Resource == mainResource {
		r.receipts[receiptKey{rc.Fence, rc.Seq}] = rc
		r.noted[receiptKey{rc.Fence, rc.Seq}] = r.now()
	}
}

// finish accounts for an outcome still unknown and checks that the
// backend's data is exactly the sidecars' receipts, in (fence, seq) order,
// and that the store kept what compaction must keep.
func (r *round) finish() {
	if u := r.unk; u != nil {
		r.logf("outcome of %s still unknown at the end, after %s (the backend offers an effect query: %v)", u.op, r.now()-u.since, r.sc.Config.Effects)
		if r.sc.Config.Effects {
			// The operator could have settled it: its time counts.
			r.unknownTime(u.op, r.now()-u.since, "still unknown at the end, although the backend's effect query could settle it")
		} else {
			r.res.NoEvidence++
		}
	}
	for i := range r.sidecars {
		r.checkCoverage(i)
	}
	ctx := context.Background()
	applied := r.back.applied
	for i, a := range applied {
		if i > 0 {
			p := applied[i-1]
			if p.fence > a.fence || p.fence == a.fence && p.seq >= a.seq {
				r.violate(&r.res.DataMismatch, fmt.Sprintf("backend data out of (fence, seq) order: %d/%d after %d/%d", a.fence, a.seq, p.fence, p.seq))
			}
		}
		rc, ok := r.receipts[receiptKey{a.fence, a.seq}]
		switch {
		case !ok && r.unk != nil && r.unk.op == a.op:
			// Applied, and still unknown: not forgotten, not settled.
		case !ok:
			r.violate(&r.res.DataMismatch, fmt.Sprintf("the backend applied %s but no sidecar stored a receipt for it", a.op))
		case rc.PayloadDigest != payloadDigest(http.MethodPut, mainPath, a.body):
			r.violate(&r.res.DataMismatch, fmt.Sprintf("receipt %s does not match the applied payload", rc.ID))
		}
	}
	keys := make([]receiptKey, 0, len(r.receipts))
	for k := range r.receipts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b receiptKey) int {
		if c := cmp.Compare(a.fence, b.fence); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	rec, _ := r.st.Record(ctx, mainResource)
	for _, k := range keys {
		rc := r.receipts[k]
		if _, ok := r.back.bySeg[k]; !ok {
			r.violate(&r.res.DataMismatch, fmt.Sprintf("receipt %s (fence %d, segment %d) for a write the backend never applied", rc.ID, k.fence, k.seq))
		}
		if _, err := r.st.Receipt(ctx, store.ReceiptKey{Resource: mainResource, Fence: k.fence, Seq: k.seq}); err != nil {
			// Compaction deletes only segments below (highest, last); a
			// store loss takes what was stored before it.
			if r.lost && r.noted[k] <= r.lostAt {
				continue
			}
			if k.fence > rec.HighestFence || k.fence == rec.HighestFence && k.seq >= rec.LastSeq {
				r.violate(&r.res.DataMismatch, fmt.Sprintf("receipt %s (fence %d, segment %d) is gone from the store, but compaction must keep it (highest %d, last segment %d)",
					rc.ID, k.fence, k.seq, rec.HighestFence, rec.LastSeq))
			}
		}
	}
	// And the store holds no receipt no sidecar stored.
	fences := map[uint64]bool{rec.HighestFence: true}
	for _, g := range r.or.grants {
		if g.resource == mainResource {
			fences[g.fence] = true
		}
	}
	maxSeq := uint64(4)
	for _, a := range applied {
		fences[a.fence] = true
		maxSeq = max(maxSeq, a.seq+2)
	}
	fl := make([]uint64, 0, len(fences))
	for f := range fences {
		fl = append(fl, f)
	}
	slices.Sort(fl)
	for _, f := range fl {
		for s := uint64(1); s <= maxSeq; s++ {
			rc, err := r.st.Receipt(ctx, store.ReceiptKey{Resource: mainResource, Fence: f, Seq: s})
			if err != nil {
				continue
			}
			if mine, ok := r.receipts[receiptKey{f, s}]; !ok || mine.ID != rc.ID {
				r.violate(&r.res.DataMismatch, fmt.Sprintf("the store holds receipt %s (fence %d, segment %d) that no sidecar of the round stored", rc.ID, f, s))
			}
		}
	}
}

// payloadDigest is the sidecar's sha256(method "\n" target "\n" body).
func payloadDigest(method, target string, body []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n", method, target)
	h.Write(body)
	return fencegate.DigestPrefix + hex.EncodeToString(h.Sum(nil))
}
