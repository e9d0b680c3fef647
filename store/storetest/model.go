package storetest

import (
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/store"
)

// The reference model: a deliberately plain restatement of the rules in docs/design.md
// for one resource, written without the store's own functions (except the
// deterministic ID derivations). Values are immutable: every step returns a
// new mState, which is what porcupine requires.

// Outcome classes compared between model and store.
const (
	outOK            = "ok"
	outNotInFlight   = "not-in-flight"
	outStillInFlight = "still-in-flight"
	outUnknown       = "outcome-unknown"
	outConflict      = "conflict"
	outNotPaused     = "not-paused"
	outNotFound      = "not-found"
	outNotQuiet      = "not-quiet"
	outCorrupt       = "corrupt"
)

type mReceipt struct {
	root, payload string
}

type mMut struct {
	fence, seq    uint64
	root, payload string
	unknown       bool
	byDeadline    bool
	byLoss        bool // put back by Repair
	attempts      int
	deadline      time.Time
	// quiet is when no attempt can take effect any more: the Begin's
	// QuietAt (its Deadline plus store.LegacyQuietDelay when it has none),
	// the latest of all attempts'.
	quiet time.Time
}

// quietOf is the quiet time a Begin input promises.
func quietOf(in store.BeginInput) time.Time {
	if in.QuietAt.IsZero() {
		return in.Deadline.Add(store.LegacyQuietDelay)
	}
	return in.QuietAt
}

type mState struct {
	exists     bool
	highest    uint64
	root       string
	lastSeq    uint64
	evidence   store.Evidence       // with the highest fence's lineage
	prior      []store.PriorLineage // lineages that held the highest fence before, oldest first
	inflight   *mMut
	paused     bool
	receipts   map[[2]uint64]mReceipt
	quarantine map[string]uint64
}

// mOut is what an operation returned, reduced to what the model predicts.
type mOut struct {
	Decision store.Decision // Begin
	Class    string         // other operations: outOK or an error class
	ID       string         // receipt ID for REPLAY, SEGMENT_CONFLICT, FENCE_REGRESSION over a receipt, Commit, Resolve(applied)
	Op       string         // operation ID of the mutation in a Begin result
}

func (s mState) clone() mState {
	if s.inflight != nil {
		m := *s.inflight
		s.inflight = &m
	}
	s.receipts = maps.Clone(s.receipts)
	s.quarantine = maps.Clone(s.quarantine)
	return s
}

func opID(root string, seq uint64) string { return fencegate.OperationID(root, seq) }

func (s mState) begin(in store.BeginInput) (mState, mOut) {
	s = s.clone()
	if m := s.inflight; m != nil && !m.unknown && !in.Now.Before(m.deadline) {
		m.unknown, m.byDeadline, m.byLoss = true, true, false
	}
	// Two known, different lineages: evidence does not compare.
	otherLineage := in.Evidence.Lineage != "" && s.evidence.Lineage != "" && in.Evidence.Lineage != s.evidence.Lineage
	later := in.Evidence.IssuerEpoch > s.evidence.IssuerEpoch ||
		in.Evidence.IssuerEpoch == s.evidence.IssuerEpoch && in.Evidence.BackendRevision > s.evidence.BackendRevision
	rc, accepted := s.receipts[[2]uint64{in.Fence, in.Seq}]
	m := s.inflight
	switch {
	case s.paused:
		return s, mOut{Decision: store.DecisionPaused}
	case m != nil && m.unknown:
		if in.RetryUnknown && m.fence == in.Fence && m.seq == in.Seq && m.root == in.Root && m.payload == in.PayloadDigest {
			m.unknown = false
			m.attempts++
			m.deadline = in.Deadline
			if q := quietOf(in); q.After(m.quiet) {
				m.quiet = q
			}
			return s, mOut{Decision: store.DecisionProceed, Op: opID(m.root, m.seq)}
		}
		return s, mOut{Decision: store.DecisionMutationUnknown, Op: opID(m.root, m.seq)}
	case accepted && rc.root != in.Root:
		// The fence was accepted under another grant: issued twice.
		s.paused = true
		orig := in.Ref()
		orig.Root = rc.root
		return s, mOut{Decision: store.DecisionFenceRegression, ID: store.ReceiptID(orig, rc.payload)}
	case accepted && rc.payload == in.PayloadDigest:
		return s, mOut{Decision: store.DecisionReplay, ID: store.ReceiptID(in.Ref(), rc.payload)}
	case accepted:
		if s.quarantine == nil {
			s.quarantine = map[string]uint64{}
		}
		s.quarantine[store.QuarantineID(in.Ref(), in.PayloadDigest)]++
		return s, mOut{Decision: store.DecisionSegmentConflict, ID: store.ReceiptID(in.Ref(), rc.payload)}
	case in.Fence < s.highest && otherLineage && slices.ContainsFunc(s.prior, func(p store.PriorLineage) bool {
		return p.Lineage == in.Evidence.Lineage && in.Fence <= p.Fence
	}):
		// A fence a lineage issued before one that continued above it
		// superseded it.
		return s, mOut{Decision: store.DecisionStaleOwner}
	case in.Fence < s.highest && otherLineage:
		// A registry that did not continue above the highest fence.
		s.paused = true
		return s, mOut{Decision: store.DecisionFenceRegression}
	case in.Fence < s.highest && later:
		s.paused = true
		return s, mOut{Decision: store.DecisionFenceRegression}
	case in.Fence < s.highest:
		return s, mOut{Decision: store.DecisionStaleOwner}
	case in.Fence == s.highest && s.root != "" && in.Root != s.root:
		// The highest fence under another grant: issued twice, even while
		// a mutation is in flight.
		s.paused = true
		return s, mOut{Decision: store.DecisionFenceRegression}
	case m != nil:
		return s, mOut{Decision: store.DecisionBusy, Op: opID(m.root, m.seq)}
	case in.Fence > s.highest && in.Seq != 1:
		return s, mOut{Decision: store.DecisionSegmentGap}
	case in.Fence > s.highest:
		if s.evidence.Lineage != "" && s.evidence.Lineage != in.Evidence.Lineage {
			s.prior = withPrior(s.prior, s.evidence.Lineage, s.highest)
		}
		s.highest, s.root, s.lastSeq, s.evidence = in.Fence, in.Root, 0, in.Evidence
	case in.Root != s.root || in.Seq != s.lastSeq+1:
		return s, mOut{Decision: store.DecisionSegmentGap}
	}
	s.exists = true
	s.inflight = &mMut{fence: in.Fence, seq: in.Seq, root: in.Root, payload: in.PayloadDigest, attempts: 1, deadline: in.Deadline, quiet: quietOf(in)}
	return s, mOut{Decision: store.DecisionProceed, Op: opID(in.Root, in.Seq)}
}

func (s mState) matches(r store.OpRef) bool {
	m := s.inflight
	return m != nil && m.fence == r.Fence && m.seq == r.Seq && m.root == r.Root
}

// withPrior is prior with l, superseded at fence, last (moved there if
// present, keeping the higher fence), the newest store.MaxPriorLineages
// kept; prior is not modified.
func withPrior(prior []store.PriorLineage, l string, fence uint64) []store.PriorLineage {
	for _, p := range prior {
		if p.Lineage == l {
			fence = max(fence, p.Fence)
		}
	}
	out := slices.DeleteFunc(slices.Clone(prior), func(x store.PriorLineage) bool { return x.Lineage == l })
	out = append(out, store.PriorLineage{Lineage: l, Fence: fence})
	return out[max(0, len(out)-store.MaxPriorLineages):]
}

// settle is Commit and Resolve(applied).
func (s mState) settle(r store.OpRef) (mState, mOut) {
	rc, receipted := s.receipts[[2]uint64{r.Fence, r.Seq}]
	if !s.matches(r) {
		if receipted && rc.root == r.Root {
			return s, mOut{Class: outOK, ID: store.ReceiptID(r, rc.payload)}
		}
		return s, mOut{Class: outNotInFlight}
	}
	if receipted {
		// Only after a Repair that took another root's place under the
		// same fence: that root's receipt holds the segment's key.
		return s, mOut{Class: outCorrupt}
	}
	s = s.clone()
	if s.receipts == nil {
		s.receipts = map[[2]uint64]mReceipt{}
	}
	p := s.inflight.payload
	s.receipts[[2]uint64{r.Fence, r.Seq}] = mReceipt{root: r.Root, payload: p}
	s.lastSeq = r.Seq
	s.inflight = nil
	return s, mOut{Class: outOK, ID: store.ReceiptID(r, p)}
}

func (s mState) commit(r store.OpRef) (mState, mOut) { return s.settle(r) }

func (s mState) markUnknown(r store.OpRef) (mState, mOut) {
	if !s.matches(r) {
		return s, mOut{Class: outNotInFlight}
	}
	s = s.clone()
	s.inflight.unknown, s.inflight.byDeadline, s.inflight.byLoss = true, false, false
	return s, mOut{Class: outOK}
}

func (s mState) abort(r store.OpRef) (mState, mOut) {
	if !s.matches(r) {
		return s, mOut{Class: outNotInFlight}
	}
	if s.inflight.unknown && !s.inflight.byDeadline {
		return s, mOut{Class: outUnknown}
	}
	s = s.clone()
	if s.inflight.attempts > 1 {
		s.inflight.unknown, s.inflight.byDeadline, s.inflight.byLoss = true, false, false
	} else {
		s.inflight = nil
	}
	return s, mOut{Class: outOK}
}

// resolve is Resolve of in (its OpRef, Applied, Closed, EvidenceAge and Now).
func (s mState) resolve(in store.ResolveInput) (mState, mOut) {
	r, now := in.OpRef, in.Now
	if s.matches(r) && !s.inflight.unknown && now.Before(s.inflight.deadline) {
		return s, mOut{Class: outStillInFlight}
	}
	if in.Applied {
		return s.settle(r)
	}
	if !s.matches(r) {
		if rc, ok := s.receipts[[2]uint64{r.Fence, r.Seq}]; ok && rc.root == r.Root {
			return s, mOut{Class: outConflict}
		}
		return s, mOut{Class: outNotInFlight}
	}
	// Not applied only on evidence no later apply can overtake.
	if !in.Closed && now.Add(-in.EvidenceAge).Before(s.inflight.quiet) {
		return s, mOut{Class: outNotQuiet}
	}
	s = s.clone()
	s.inflight = nil
	return s, mOut{Class: outOK}
}

func (s mState) pause() (mState, mOut) {
	s = s.clone()
	s.exists = true
	s.paused = true
	return s, mOut{Class: outOK}
}

// repair is Repair of the anchored a at now: raise to the anchor, never
// lower, put back what may have reached the backend, pause.
func (s mState) repair(a fencegate.Progress, now time.Time, window time.Duration) (mState, mOut) {
	s = s.clone()
	lost := func() *mMut {
		if a.Pending == nil {
			return nil
		}
		return &mMut{fence: a.Fence, seq: a.Pending.Seq, root: a.Root, payload: a.Pending.PayloadDigest,
			unknown: true, byLoss: true, attempts: 1, deadline: now.Add(window), quiet: now.Add(window)}
	}
	anchored := store.Evidence{IssuerEpoch: a.IssuerEpoch, BackendRevision: a.BackendRevision, Lineage: a.Lineage}
	switch {
	case a.Fence > s.highest:
		if s.evidence.Lineage != "" && s.evidence.Lineage != a.Lineage {
			s.prior = withPrior(s.prior, s.evidence.Lineage, s.highest)
		}
		s.highest, s.root, s.lastSeq, s.evidence, s.inflight = a.Fence, a.Root, a.LastSeq, anchored, lost()
	case a.Fence == s.highest && a.Fence > 0 && a.Root != s.root:
		s.root, s.lastSeq, s.evidence, s.inflight = a.Root, a.LastSeq, anchored, lost()
	case a.Fence == s.highest && a.Fence > 0:
		s.lastSeq = max(s.lastSeq, a.LastSeq)
		if m := s.inflight; m != nil && m.seq <= s.lastSeq {
			s.inflight = nil
		}
		switch p, m := a.Pending, s.inflight; {
		case p == nil || s.lastSeq >= p.Seq:
		case m == nil || m.seq != p.Seq || m.payload != p.PayloadDigest:
			s.inflight = lost()
		case !m.unknown:
			// The very mutation, in flight: it may have landed before,
			// and is not quiet before now + window.
			m.unknown, m.byLoss, m.byDeadline = true, true, false
			if q := now.Add(window); q.After(m.quiet) {
				m.quiet = q
			}
		}
	}
	s.exists, s.paused = true, true
	return s, mOut{Class: outOK}
}

func (s mState) resume() (mState, mOut) {
	switch {
	case !s.exists:
		return s, mOut{Class: outNotFound}
	case !s.paused:
		return s, mOut{Class: outNotPaused}
	}
	s = s.clone()
	s.paused = false
	return s, mOut{Class: outOK}
}

// classOf maps a store error to a model outcome class.
func classOf(err error) string {
	switch {
	case err == nil:
		return outOK
	case errors.Is(err, store.ErrNotInFlight):
		return outNotInFlight
	case errors.Is(err, store.ErrStillInFlight):
		return outStillInFlight
	case errors.Is(err, store.ErrOutcomeUnknown):
		return outUnknown
	case errors.Is(err, store.ErrConflict):
		return outConflict
	case errors.Is(err, store.ErrNotPaused):
		return outNotPaused
	case errors.Is(err, store.ErrNotFound):
		return outNotFound
	case errors.Is(err, store.ErrNotQuiet):
		return outNotQuiet
	case errors.Is(err, store.ErrCorrupt):
		return outCorrupt
	}
	return "error: " + err.Error()
}

// beginOut reduces a Begin result to what the model predicts.
func beginOut(r store.BeginResult) mOut {
	o := mOut{Decision: r.Decision}
	switch r.Decision {
	case store.DecisionReplay, store.DecisionSegmentConflict, store.DecisionFenceRegression:
		if r.Receipt != nil {
			o.ID = r.Receipt.ID
		}
	case store.DecisionProceed, store.DecisionBusy, store.DecisionMutationUnknown:
		if r.Mutation != nil {
			o.Op = r.Mutation.OperationID
		}
	}
	return o
}

// sameRecord compares a stored record with the model's state.
func (s mState) sameRecord(rec store.Record, found bool) bool {
	if found != s.exists {
		return false
	}
	if !found {
		return true
	}
	if rec.HighestFence != s.highest || rec.Root != s.root || rec.LastSeq != s.lastSeq || !slices.Equal(rec.PriorLineages, s.prior) ||
		rec.Evidence != s.evidence || (rec.Pause != nil) != s.paused || (rec.InFlight != nil) != (s.inflight != nil) {
		return false
	}
	if m := s.inflight; m != nil {
		g := rec.InFlight
		cause := store.CauseNoAnswer
		switch {
		case m.byDeadline:
			cause = store.CauseDeadline
		case m.byLoss:
			cause = store.CauseStoreLoss
		}
		if g.Fence != m.fence || g.Seq != m.seq || g.Root != m.root || g.PayloadDigest != m.payload ||
			int(g.Attempts) != m.attempts || !g.Deadline.Equal(m.deadline) || !g.QuietBy().Equal(m.quiet) ||
			(g.State == store.MutationUnknown) != m.unknown || (m.unknown && g.Cause != cause) {
			return false
		}
	}
	return true
}
