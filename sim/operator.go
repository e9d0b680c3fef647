package sim

import (
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

// The operator settles unknown outcomes by the backend's truth, as
// docs/design.md section 8 step 4 says (fencegate reconcile --applied or
// --not-applied), and recovers from a registry restore as section 10 says.

// reconcileDelay is how long after an unknown outcome the operator acts.
// On routes with idempotencyKey it waits longer than a worker's retry of
// the same segment (2 s), so that retry settles the unknown first
// (section 8, step 3) and the operator finds nothing left, or a retry that
// failed again.
func (r *round) reconcileDelay() time.Duration {
	if r.sc.Config.Idempotent {
		return 3 * time.Second
	}
	return 500 * time.Millisecond
}

// operatorSoon schedules a reconciliation pass: soon after an answer was
// lost, and after the marker's deadline when a sidecar died mid-forward
// (its marker stays IN_FLIGHT until then).
func (r *round) operatorSoon(crashed bool) {
	d := r.reconcileDelay()
	if crashed {
		d = backendTimeout + 5*time.Second + time.Millisecond
	}
	r.after(d, "operator reconciles", func() { r.reconcile(false) })
}

// reconcile settles every unknown mutation through a live sidecar, by the
// backend's truth. At the end of a round (final) it first lets every
// in-flight marker reach its deadline.
func (r *round) reconcile(final bool) {
	ctx := context.Background()
	p := r.sidecars[0].p
	if final {
		// Up to the marker's deadline, and its quiet time: before that a
		// "not applied" is refused (the backend may still apply it).
		if rec, err := r.st.Record(ctx, mainResource); err == nil && rec.InFlight != nil {
			if end := maxTime(rec.InFlight.Deadline, rec.InFlight.QuietBy()); end.After(r.clk.Now()) {
				r.clk.AdvanceTo(end.Add(time.Millisecond))
			}
		}
	}
	list, err := p.Unknown(ctx)
	if err != nil {
		r.violate(&r.res.Skipped, "listing unknown mutations failed: "+err.Error())
		return
	}
	for _, m := range list {
		applied, body := r.back.truth(m.OperationID)
		if _, err := p.Reconcile(ctx, m.Resource, m.OperationID, applied, http.StatusCreated, body); err != nil {
			r.logf("operator: reconcile %s: %v", m.OperationID, err)
			if nq := (*store.NotQuietError)(nil); errors.As(err, &nq) && !final {
				// Not quiet yet: look again when it is.
				r.at(nq.QuietAt.Sub(r.start)+time.Millisecond, "operator reconciles", func() { r.reconcile(false) })
			}
			continue
		}
		since := m.UnknownSince
		if since.IsZero() {
			since = m.Deadline
		}
		d := r.clk.Now().Sub(since)
		r.res.MaxUnknown = max(r.res.MaxUnknown, d)
		r.logf("operator: %s settled as applied=%v after %s unknown", m.OperationID, applied, d)
	}
	if !final {
		if rec, err := r.st.Record(ctx, mainResource); err == nil && rec.InFlight != nil && rec.InFlight.State == store.MutationInFlight {
			// Still in flight: its process may have died; look again at its deadline.
			r.at(rec.InFlight.Deadline.Sub(r.start)+time.Millisecond, "operator reconciles", func() { r.reconcile(false) })
		}
	}
}

func (r *round) snapshot(e event) {
	r.snap = r.rs.Snapshot()
	r.or.snapshot()
	r.logf("%s: registry state saved", e)
}

// restore puts the registry back to its snapshot; a second later the
// operator recovers: epoch bump, fence floor above every accepted fence,
// resume of the paused resource.
func (r *round) restore(e event) {
	if r.snap == nil {
		return
	}
	r.rs.Restore(r.snap)
	r.or.restore(r.now())
	r.logf("%s: registry restored to its snapshot", e)
	r.after(time.Second, "operator recovers from the restore", func() {
		ctx := context.Background()
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

// finish settles what is left and checks that the backend's data is
// exactly the store's receipts, in (fence, seq) order.
func (r *round) finish() {
	r.reconcile(true)
	for i := range r.sidecars {
		r.checkCoverage(i)
	}
	ctx := context.Background()
	applied := r.back.applied
	type key struct{ fence, seq uint64 }
	want := map[key]appliedOp{}
	for i, a := range applied {
		want[key{a.fence, a.seq}] = a
		if i > 0 {
			p := applied[i-1]
			if p.fence > a.fence || p.fence == a.fence && p.seq >= a.seq {
				r.violate(&r.res.DataMismatch, fmt.Sprintf("backend data out of (fence, seq) order: %d/%d after %d/%d", a.fence, a.seq, p.fence, p.seq))
			}
		}
	}
	// Every receipt the store holds for a fence the round used, and every
	// applied write, must match one to one.
	fences := map[uint64]bool{}
	for _, g := range r.or.grants {
		if g.resource == mainResource {
			fences[g.fence] = true
		}
	}
	for _, a := range applied {
		fences[a.fence] = true
	}
	fl := make([]uint64, 0, len(fences))
	for f := range fences {
		fl = append(fl, f)
	}
	slices.Sort(fl)
	maxSeq := uint64(4)
	for _, a := range applied {
		maxSeq = max(maxSeq, a.seq+2)
	}
	for _, f := range fl {
		for s := uint64(1); s <= maxSeq; s++ {
			rc, err := r.st.Receipt(ctx, store.ReceiptKey{Resource: mainResource, Fence: f, Seq: s})
			a, ok := want[key{f, s}]
			switch {
			case err != nil && ok:
				r.violate(&r.res.DataMismatch, fmt.Sprintf("the backend applied %s but the store has no receipt for it", a.op))
			case err == nil && !ok:
				r.violate(&r.res.DataMismatch, fmt.Sprintf("receipt %s (fence %d, segment %d) for a write the backend never applied", rc.ID, f, s))
			case err == nil && rc.PayloadDigest != payloadDigest(http.MethodPut, mainPath, a.body):
				r.violate(&r.res.DataMismatch, fmt.Sprintf("receipt %s does not match the applied payload", rc.ID))
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

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
