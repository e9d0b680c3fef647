package store

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fencegate/fencegate"
)

// RepairInput raises a resource's record to what the store's outside
// anchor says it accepted (docs/design.md, "Store loss and repair"): the
// caller found the record behind its anchor (ProgressOf(record) does not
// cover Anchored), so the store lost data.
type RepairInput struct {
	// Resource is the canonical resource ID.
	Resource string
	// Anchored is the resource's progress as the anchor holds it.
	Anchored fencegate.Progress
	// Detail is free text for operators, put first in the pause's detail
	// (at most MaxDetailLen bytes; the pause's detail is cut there).
	Detail string
	// Now is the caller's current time.
	Now time.Time
	// Window is how long a mutation put back as UNKNOWN may still be
	// applied by the backend from Now on (the sidecar passes
	// backend.timeout + backend.maxApplyDelay): the repaired marker is
	// not quiet before Now + Window. 0..MaxInFlightWindow.
	Window time.Duration
	// Withdraw, when set, is the caller's own Begin that found the loss
	// (its Prior did not cover the anchor), which was neither anchored nor
	// forwarded. When that Begin raised the fence above the anchored one
	// over an anchored pending mutation, the repair starts from the record
	// as the Begin read it (see DecideRepair).
	Withdraw *Withdrawal
}

// Withdrawal names a Begin that found its record behind the outside
// anchor: the mutation it marked in flight and the record it read
// (BeginResult.Prior).
type Withdrawal struct {
	Mutation OpRef
	Before   Record
}

// Validate checks a Repair input: a valid resource, an anchored Progress
// of a valid shape whose root, lineage, lease, grant digest and pending
// owner are ones a Begin could have written, a bounded detail, a Now and
// a window in 0..MaxInFlightWindow.
func (in RepairInput) Validate() error {
	if err := ValidateResource(in.Resource); err != nil {
		return err
	}
	if err := validateAnchored(in.Anchored); err != nil {
		return err
	}
	if err := checkText("detail", in.Detail, MaxDetailLen, false); err != nil {
		return err
	}
	if err := checkNow(in.Now); err != nil {
		return err
	}
	if in.Window < 0 || in.Window > MaxInFlightWindow {
		return invalid("window", "must be in 0.."+MaxInFlightWindow.String())
	}
	if w := in.Withdraw; w != nil {
		if err := w.Mutation.Validate(); err != nil {
			return err
		}
		if w.Mutation.Resource != in.Resource || w.Before.Exists() && w.Before.Resource != in.Resource {
			return invalid("withdraw", "names another resource")
		}
	}
	return nil
}

// validateAnchored checks a Repair's anchored progress: its own shape,
// and with a fence, the root, lineage, lease, grant digest and pending
// segment it names.
func validateAnchored(a fencegate.Progress) error {
	if err := a.Validate(); err != nil {
		return invalidErr("anchored", err)
	}
	if a.Fence == 0 {
		return nil
	}
	if err := invalidErr("anchored.root", fencegate.ValidateOperationRoot(a.Root)); err != nil {
		return err
	}
	if err := ValidateLineage("anchored.lineage", a.Lineage); err != nil {
		return err
	}
	if err := checkText("anchored.lease", a.Lease, MaxLeaseLen, false); err != nil {
		return err
	}
	if a.GrantDigest != "" {
		if err := ValidateDigest("anchored.grantDigest", a.GrantDigest); err != nil {
			return err
		}
	}
	if p := a.Pending; p != nil {
		if p.Seq > fencegate.MaxSeq {
			return invalid("anchored.pending.seq", "must be in 1.."+strconv.Itoa(fencegate.MaxSeq))
		}
		if err := checkText("anchored.pending.owner", p.Owner, MaxOwnerLen, false); err != nil {
			return err
		}
	}
	return nil
}

// DecideRepair is Repair as a pure function over the resource's stored
// record (the zero Record if none). It raises the record to the anchor and
// never lowers the highest fence:
//
//   - anchored fence above the record's: the record takes the anchor's
//     fence, root, lease, grant digest, evidence (lineage included) and
//     last segment; the record's lineage, when known and another, joins
//     PriorLineages (as when Decide accepts a higher fence). Its marker, of
//     a lower fence, is dropped: by the anchor's ordering it was settled
//     before the anchored Begin, or was never forwarded. The anchored
//     pending mutation, if any, becomes the record's marker, UNKNOWN with
//     cause STORE_LOSS;
//   - same fence and root: the last segment becomes the greater of the
//     two; a marker at or below it is dropped (settled); an anchored
//     pending mutation the record does not cover becomes the marker,
//     UNKNOWN (STORE_LOSS), replacing one that is not it; a marker that is
//     that very mutation (same segment and payload) and still IN_FLIGHT
//     becomes UNKNOWN (STORE_LOSS) too: it may be a Begin of it again that
//     was never forwarded (it found the loss) while an earlier attempt
//     may have reached the backend, so its owner cannot Abort it away;
//   - same fence, another root: the fence was issued twice, and the
//     anchor's grant is the one that was forwarded (every forwarded
//     mutation is anchored, and the anchor never changes roots under one
//     fence), so the record takes the anchor's root, grant and last
//     segment as in the first case, and the pause's detail says so. The
//     record's own last segment under the other root may be higher: it is
//     another grant's history, never forwarded;
//   - anchored fence below the record's (or none): nothing but the pause.
//
// One case comes first: in.Withdraw names the caller's own Begin, still
// the record's marker (IN_FLIGHT, first attempt, segment 1 of the
// record's highest fence, nothing committed under it), which raised the
// fence from the Before record's (at most the anchored fence) to one above
// the anchored fence, while the anchor holds a pending mutation. Every
// forwarded mutation is anchored first and an anchor never goes back, so
// no mutation under the raised fence reached the backend; keeping that
// fence would hide the anchored mutation, which may still land (the record
// can hold only a marker of its highest fence, and a higher fence covers a
// lower one). So the raise is withdrawn: the repair starts from Before
// (with any pause written since) and the anchored mutation comes back as
// UNKNOWN. This is the one way a record's highest fence goes down, and
// only to the anchored fence, which is at least every fence forwarded.
//
// In every case the resource ends up paused with reason STORE_LOSS, so an
// operator looks before writes resume; an earlier pause of another reason
// is replaced, its reason and detail kept in the new detail. A record
// already paused for STORE_LOSS that needs nothing raised is left as it
// is, so a repeated repair writes nothing. A mutation put back as UNKNOWN
// has UnknownSince and BegunAt = Now and Deadline = QuietAt = Now + Window;
// a marker kept but marked UNKNOWN again has its QuietAt raised to at least
// Now + Window.
//
// The result covers the anchor (ProgressOf(result).Covers(Anchored)).
func DecideRepair(rec Record, in RepairInput) (Change, error) {
	if err := in.Validate(); err != nil {
		return Change{}, err
	}
	if rec.Exists() && rec.Resource != in.Resource {
		return Change{}, fmt.Errorf("store: repair: record of %q for %q: %w", rec.Resource, in.Resource, ErrCorrupt)
	}
	now := normTime(in.Now)
	a := in.Anchored
	next := rec.Clone()
	changed := !rec.Exists()
	next.Resource = in.Resource
	var notes []string
	if w := in.Withdraw; w != nil && withdraws(rec, *w, a) {
		m := rec.InFlight
		next = w.Before.Clone()
		next.Resource = in.Resource
		if rec.Pause != nil {
			p := *rec.Pause
			next.Pause = &p
		}
		notes = append(notes, "fence "+u(m.Fence)+" of "+m.OperationID+", begun on the record that lost data and never anchored nor forwarded, withdrawn")
		changed = true
	}
	switch {
	case a.Fence > next.HighestFence:
		notes = append(notes, "highest fence "+u(next.HighestFence)+" raised to the anchored "+u(a.Fence))
		if l := next.Evidence.Lineage; l != "" && l != a.Lineage {
			next.PriorLineages = pushLineage(next.PriorLineages, l, next.HighestFence)
		}
		adoptAnchor(&next, in, now)
		changed = true
	case a.Fence == next.HighestFence && a.Fence > 0 && a.Root != next.Root:
		notes = append(notes, "fence "+u(a.Fence)+" issued twice: the store held operation root "+next.Root+" (lease "+next.Lease+
			"), the anchor root "+a.Root+" (lease "+a.Lease+"), which is what was forwarded")
		adoptAnchor(&next, in, now)
		changed = true
	case a.Fence == next.HighestFence && a.Fence > 0:
		if a.LastSeq > next.LastSeq {
			notes = append(notes, "last segment "+u(next.LastSeq)+" raised to the anchored "+u(a.LastSeq))
			next.LastSeq = a.LastSeq
			changed = true
		}
		if m := next.InFlight; m != nil && m.Seq <= next.LastSeq {
			next.InFlight = nil
			changed = true
		}
		if p := a.Pending; p != nil && next.LastSeq < p.Seq {
			switch m := next.InFlight; {
			case m == nil || m.Seq != p.Seq || m.PayloadDigest != p.PayloadDigest:
				notes = append(notes, "mutation "+fencegate.OperationID(a.Root, p.Seq)+" put back as UNKNOWN")
				next.InFlight = anchoredMutation(in, now)
				changed = true
			case m.State == MutationInFlight || m.Attempts < p.Attempts:
				// The very mutation, marked again by a Begin that was not
				// forwarded (its Prior did not cover the anchor), or still
				// forwarding, or holding fewer attempts than were anchored
				// (a later attempt's Begin was lost): an earlier or the lost
				// attempt may have reached the backend.
				notes = append(notes, "mutation "+m.OperationID+" marked UNKNOWN")
				m.State, m.Cause = MutationUnknown, CauseStoreLoss
				m.Attempts = max(m.Attempts, p.Attempts)
				// The attempt that may have reached the backend may be the
				// lost one: not quiet before Now + Window either.
				if q := now.Add(in.Window); q.After(m.QuietBy()) {
					m.QuietAt = q
				}
				if m.UnknownSince.IsZero() {
					m.UnknownSince = now
				}
				changed = true
			}
		}
	}
	if old := next.Pause; old == nil || old.Reason != PauseStoreLoss || len(notes) > 0 {
		detail := in.Detail
		if detail == "" {
			detail = "the store was behind its anchor (data lost)"
		}
		if len(notes) > 0 {
			detail += ": " + strings.Join(notes, "; ")
		}
		if old != nil {
			detail += "; earlier pause " + string(old.Reason)
			if old.Fence > 0 {
				detail += " (fence " + u(old.Fence) + ", epoch " + u(old.Evidence.IssuerEpoch) + ", revision " + u(old.Evidence.BackendRevision) + ")"
			}
			if old.Detail != "" {
				detail += ": " + old.Detail
			}
		}
		next.Pause = &Pause{Reason: PauseStoreLoss, Detail: clip(detail, MaxDetailLen), At: now, Fence: a.Fence, Evidence: anchoredEvidence(a)}
		changed = true
	}
	if !changed {
		return Change{Record: next}, nil
	}
	return Change{Record: next, WriteRecord: true}, nil
}

// withdraws reports whether the Begin w names raised rec's fence above the
// anchor a over a pending mutation of a, with nothing else under that
// fence (see DecideRepair).
func withdraws(rec Record, w Withdrawal, a fencegate.Progress) bool {
	m := rec.InFlight
	return a.Pending != nil && m != nil && m.matches(w.Mutation) && m.State == MutationInFlight && m.Attempts == 1 &&
		m.Fence == rec.HighestFence && m.Seq == 1 && rec.LastSeq == 0 &&
		w.Before.HighestFence < rec.HighestFence && a.Fence < rec.HighestFence && w.Before.HighestFence <= a.Fence
}

// adoptAnchor makes the anchor's fence, grant and segment the record's,
// with the anchored pending mutation (if any) as its UNKNOWN marker.
func adoptAnchor(next *Record, in RepairInput, now time.Time) {
	a := in.Anchored
	next.HighestFence = a.Fence
	next.Root = a.Root
	next.Lease = a.Lease
	next.GrantDigest = a.GrantDigest
	next.Evidence = anchoredEvidence(a)
	next.AcceptedAt = now
	next.LastSeq = a.LastSeq
	next.Superseded = Superseded{} // what came before the anchored fence is not known
	next.InFlight = nil
	if a.Pending != nil {
		next.InFlight = anchoredMutation(in, now)
	}
}

func anchoredEvidence(a fencegate.Progress) Evidence {
	return Evidence{IssuerEpoch: a.IssuerEpoch, BackendRevision: a.BackendRevision, Lineage: a.Lineage}
}

// anchoredMutation is the anchored pending mutation as an UNKNOWN marker.
func anchoredMutation(in RepairInput, now time.Time) *Mutation {
	a, p := in.Anchored, in.Anchored.Pending
	ref := OpRef{Resource: in.Resource, Fence: a.Fence, Root: a.Root, Seq: p.Seq}
	return &Mutation{
		OpRef:         ref,
		OperationID:   ref.OperationID(),
		PayloadDigest: p.PayloadDigest,
		GrantDigest:   a.GrantDigest,
		Lease:         a.Lease,
		Owner:         p.Owner,
		Evidence:      anchoredEvidence(a),
		BegunAt:       now,
		Deadline:      now.Add(in.Window),
		QuietAt:       now.Add(in.Window),
		Attempts:      max(1, p.Attempts),
		State:         MutationUnknown,
		Cause:         CauseStoreLoss,
		UnknownSince:  now,
	}
}
