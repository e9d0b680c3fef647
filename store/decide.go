package store

import (
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// Decide is Begin's decision, a pure function shared by every backend. rec is
// the resource's stored record (the zero Record if none); receipt is the
// receipt stored for (in.Resource, in.Fence, in.Seq), or nil. It returns the
// result for the caller and the change to write atomically with the read.
// The check order is documented in the package comment.
func Decide(rec Record, receipt *Receipt, in BeginInput) (BeginResult, Change, error) {
	if err := in.Validate(); err != nil {
		return BeginResult{}, Change{}, err
	}
	if rec.Exists() && rec.Resource != in.Resource {
		return BeginResult{}, Change{}, fmt.Errorf("store: decide: record of %q for %q: %w", rec.Resource, in.Resource, ErrCorrupt)
	}
	if receipt != nil && receipt.Key() != (ReceiptKey{Resource: in.Resource, Fence: in.Fence, Seq: in.Seq}) {
		return BeginResult{}, Change{}, fmt.Errorf("store: decide: receipt %v for %s: %w", receipt.Key(), in.Ref().OperationID(), ErrCorrupt)
	}
	now := normTime(in.Now)
	next := rec.Clone()
	next.Resource = in.Resource
	changed := false

	// 0. An expired marker becomes unknown; it is never silently stolen.
	if m := next.InFlight; m != nil && m.Expired(now) {
		m.State = MutationUnknown
		m.Cause = CauseDeadline
		if m.UnknownSince.IsZero() {
			m.UnknownSince = now
		}
		changed = true
	}

	d := decider{in: in, next: &next}
	d.res.Prior = rec.Clone()
	switch {
	// 1. Paused, or blocked by an unknown outcome.
	case next.Pause != nil:
		d.decide(DecisionPaused, "resource paused: "+string(next.Pause.Reason))
	case next.Unknown():
		m := next.InFlight
		if in.RetryUnknown && m.Fence == in.Fence && m.Root == in.Root && m.Seq == in.Seq && m.PayloadDigest == in.PayloadDigest {
			m.State = MutationInFlight
			m.Attempts++
			m.BegunAt = now
			// The earlier attempts may still land: the quiet time only
			// moves later.
			m.QuietAt = laterQuiet(m.QuietBy(), in)
			m.Deadline = normTime(in.Deadline)
			changed = true
			d.decide(DecisionProceed, "retry of unknown mutation "+m.OperationID)
		} else {
			d.decide(DecisionMutationUnknown, "outcome of "+m.OperationID+" unknown, awaiting reconciliation")
		}
		d.res.Mutation = cloneMutation(m)

	// 2. The segment was accepted before: under another operation root, the
	// fence was issued twice; under the same root, replay or conflict.
	case receipt != nil && receipt.Root != in.Root:
		r := receipt.Clone()
		d.res.Receipt = &r
		d.regress(now, "fence "+u(in.Fence)+" issued twice: segment "+u(in.Seq)+" accepted as "+receipt.ID+
			" under operation root "+receipt.Root+", attempted under root "+in.Root+" (lease "+in.Lease+")")
		changed = true
	case receipt != nil:
		r := receipt.Clone()
		d.res.Receipt = &r
		if receipt.PayloadDigest == in.PayloadDigest {
			d.decide(DecisionReplay, "segment accepted before as "+receipt.ID)
		} else {
			ref := in.Ref()
			q := Quarantine{
				ID:                    QuarantineID(ref, in.PayloadDigest),
				OpRef:                 ref,
				OperationID:           ref.OperationID(),
				PayloadDigest:         in.PayloadDigest,
				AcceptedPayloadDigest: receipt.PayloadDigest,
				ReceiptID:             receipt.ID,
				GrantDigest:           in.GrantDigest,
				FirstSeen:             now,
				LastSeen:              now,
				Attempts:              1,
			}
			d.ch.Quarantine = &q
			qq := q
			d.res.Quarantine = &qq
			d.decide(DecisionSegmentConflict, "segment accepted before with another payload as "+receipt.ID)
		}

	// 3. Lower than the highest accepted fence. Under another known issuer
	// lineage, evidence does not compare: a fence of a lineage the record
	// saw superseded, at most the fence it had reached then, was issued
	// before and is stale; above it (the superseded registry rolled back
	// and issuing again), or of any other lineage, it comes from a
	// registry that did not continue above the highest fence.
	case in.Fence < next.HighestFence && !in.Evidence.SameLineage(next.Evidence):
		top, prior := priorFence(next.PriorLineages, in.Evidence.Lineage)
		switch {
		case prior && in.Fence <= top:
			d.decide(DecisionStaleOwner, "fence "+u(in.Fence)+" of superseded issuer lineage "+in.Evidence.Lineage+
				" below highest "+u(next.HighestFence)+" of lineage "+next.Evidence.Lineage)
		case prior:
			d.regress(now, "fence "+u(in.Fence)+" of issuer lineage "+in.Evidence.Lineage+", superseded at fence "+u(top)+
				", below highest "+u(next.HighestFence)+" of lineage "+next.Evidence.Lineage+
				": issued after its registry was superseded (a registry rolled back) and not above the highest fence")
			changed = true
		default:
			d.regress(now, "fence "+u(in.Fence)+" of issuer lineage "+in.Evidence.Lineage+" below highest "+u(next.HighestFence)+
				" of lineage "+next.Evidence.Lineage+": a registry that did not continue above the highest fence")
			changed = true
		}
	case in.Fence < next.HighestFence:
		if in.Evidence.IssuedAfter(next.Evidence) {
			d.regress(now, "fence "+u(in.Fence)+" below highest "+u(next.HighestFence)+
				" with later evidence (epoch "+u(in.Evidence.IssuerEpoch)+", revision "+u(in.Evidence.BackendRevision)+")")
			changed = true
		} else {
			d.decide(DecisionStaleOwner, "fence "+u(in.Fence)+" below highest "+u(next.HighestFence))
		}

	// 4. The highest fence under another operation root: issued twice. This
	// does not wait for a mutation in flight (which may still settle).
	case in.Fence == next.HighestFence && next.Root != "" && in.Root != next.Root:
		d.regress(now, "fence "+u(in.Fence)+" issued twice: accepted under operation root "+next.Root+
			" (lease "+next.Lease+"), attempted under root "+in.Root+" (lease "+in.Lease+")")
		changed = true

	// 5. One mutation per resource at a time.
	case next.InFlight != nil:
		d.res.Mutation = cloneMutation(next.InFlight)
		d.decide(DecisionBusy, next.InFlight.OperationID+" in flight")

	// 6. A new, higher fence starts at segment 1 and becomes the highest now.
	case in.Fence > next.HighestFence:
		if in.Seq != 1 {
			d.decide(DecisionSegmentGap, "new fence "+u(in.Fence)+" must start at segment 1, got "+u(in.Seq))
			break
		}
		if l := next.Evidence.Lineage; l != "" && l != in.Evidence.Lineage {
			next.PriorLineages = pushLineage(next.PriorLineages, l, next.HighestFence)
		}
		if next.HighestFence > 0 {
			next.Superseded = Superseded{Fence: next.HighestFence, Root: next.Root, LastSeq: next.LastSeq}
		}
		next.HighestFence = in.Fence
		next.Root = in.Root
		next.Lease = in.Lease
		next.GrantDigest = in.GrantDigest
		next.Evidence = in.Evidence
		next.AcceptedAt = now
		next.LastSeq = 0
		d.proceed(now)
		changed = true

	// 7. The current fence continues its own operation, in order. (A record
	// without a root, which Decide never writes, cannot prove a double issue.)
	case in.Root != next.Root:
		d.decide(DecisionSegmentGap, "operation root differs from fence "+u(next.HighestFence)+"'s")
	case in.Seq != next.LastSeq+1:
		d.decide(DecisionSegmentGap, "segment "+u(in.Seq)+" after "+u(next.LastSeq)+", want "+u(next.LastSeq+1))
	default:
		// 8.
		d.proceed(now)
		changed = true
	}

	if changed {
		d.ch.Record = next
		d.ch.WriteRecord = true
	}
	d.res.Record = next.Clone()
	return d.res, d.ch, nil
}

type decider struct {
	in   BeginInput
	next *Record
	res  BeginResult
	ch   Change
}

func (d *decider) decide(dec Decision, detail string) {
	d.res.Decision = dec
	d.res.Detail = detail
}

// regress decides FENCE_REGRESSION and pauses the resource, recording the
// attempted fence, its evidence and what was seen. The highest fence, the
// segment and any mutation in flight are kept: that mutation may still
// Commit, MarkUnknown, Abort or be resolved.
func (d *decider) regress(now time.Time, detail string) {
	d.next.Pause = &Pause{
		Reason:   PauseFenceRegression,
		Detail:   clip(detail, MaxDetailLen),
		At:       now,
		Fence:    d.in.Fence,
		Evidence: d.in.Evidence,
	}
	d.decide(DecisionFenceRegression, d.next.Pause.Detail)
}

// clip cuts s to at most n bytes without splitting a UTF-8 sequence.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func (d *decider) proceed(now time.Time) {
	ref := d.in.Ref()
	d.next.InFlight = &Mutation{
		OpRef:         ref,
		OperationID:   ref.OperationID(),
		PayloadDigest: d.in.PayloadDigest,
		GrantDigest:   d.in.GrantDigest,
		Lease:         d.in.Lease,
		Owner:         d.in.Owner,
		Evidence:      d.in.Evidence,
		BegunAt:       now,
		Deadline:      normTime(d.in.Deadline),
		QuietAt:       normTime(d.in.QuietAt),
		Attempts:      1,
		State:         MutationInFlight,
	}
	d.res.Mutation = cloneMutation(d.next.InFlight)
	d.decide(DecisionProceed, "mutation "+ref.OperationID()+" in flight")
}

// laterQuiet is the quiet time of a retried mutation: the later of the
// earlier attempts' (old) and the retry's own, which is taken as the
// marker's QuietBy of the retry alone when the input has none.
func laterQuiet(old time.Time, in BeginInput) time.Time {
	retry := (&Mutation{Deadline: normTime(in.Deadline), QuietAt: normTime(in.QuietAt)}).QuietBy()
	if retry.After(old) {
		return retry
	}
	return old
}

// pushLineage appends l, superseded at fence, to the prior lineages ls
// (moving it to the end if it is there already, with the higher of the
// two fences), keeping the newest MaxPriorLineages. ls is not modified.
func pushLineage(ls []PriorLineage, l string, fence uint64) []PriorLineage {
	out := make([]PriorLineage, 0, len(ls)+1)
	for _, x := range ls {
		if x.Lineage != l {
			out = append(out, x)
		} else {
			fence = max(fence, x.Fence)
		}
	}
	out = append(out, PriorLineage{Lineage: l, Fence: fence})
	if len(out) > MaxPriorLineages {
		out = out[len(out)-MaxPriorLineages:]
	}
	return out
}

func cloneMutation(m *Mutation) *Mutation {
	if m == nil {
		return nil
	}
	c := *m
	return &c
}

func u(v uint64) string { return strconv.FormatUint(v, 10) }
