package store

import (
	"time"

	"github.com/fencegate/fencegate"
)

// Evidence is what the registry attested about a grant when it issued it.
// It orders grants independently of their fence tokens, which is how a token
// that went backwards (a registry restored from an old snapshot) is told apart
// from a merely stale owner.
type Evidence struct {
	// IssuerEpoch is the registry's issuer/revocation epoch at issue.
	IssuerEpoch uint64 `json:"issuerEpoch"`
	// BackendRevision is the coordination backend's revision at issue.
	BackendRevision uint64 `json:"backendRevision"`
	// Lineage is the issuer lineage of the registry that issued the grant
	// (the grant's "lineage" claim: 1..MaxLineageLen bytes of [0-9a-z]),
	// or "" for a grant of a registry that predates lineages. Epochs and
	// revisions are only comparable within one lineage.
	Lineage string `json:"lineage,omitempty"`
}

// IssuedAfter reports whether e shows a later issue than o: a higher issuer
// epoch, or the same epoch and a higher backend revision. It ignores
// lineages; Decide compares evidence only when SameLineage holds.
func (e Evidence) IssuedAfter(o Evidence) bool {
	if e.IssuerEpoch != o.IssuerEpoch {
		return e.IssuerEpoch > o.IssuerEpoch
	}
	return e.BackendRevision > o.BackendRevision
}

// SameLineage reports whether e and o may be compared as issued by one
// registry history: the same lineage, or either unknown ("").
func (e Evidence) SameLineage(o Evidence) bool {
	return e.Lineage == "" || o.Lineage == "" || e.Lineage == o.Lineage
}

// MutationState is the state of the mutation marked in flight on a resource.
type MutationState string

// Mutation states.
const (
	// MutationInFlight: Begin proceeded; the owner will Commit or Abort it,
	// or MarkUnknown if the backend's answer is lost.
	MutationInFlight MutationState = "IN_FLIGHT"
	// MutationUnknown: the outcome is unknown; the resource is blocked until
	// Resolve (or a late Commit) settles it.
	MutationUnknown MutationState = "UNKNOWN"
)

// UnknownCause says how a mutation came to be unknown.
type UnknownCause string

// Unknown causes.
const (
	// CauseNoAnswer: the owner called MarkUnknown (no answer, timeout or a
	// connection cut after the request was sent).
	CauseNoAnswer UnknownCause = "NO_ANSWER"
	// CauseDeadline: a Begin found the marker past its deadline.
	CauseDeadline UnknownCause = "DEADLINE"
	// CauseStoreLoss: Repair put the mutation back from the store's outside
	// anchor: the store had lost it, and it may have reached the backend.
	CauseStoreLoss UnknownCause = "STORE_LOSS"
)

// OpRef names one mutation: a segment of an operation under a fence.
type OpRef struct {
	// Resource is the canonical resource ID.
	Resource string `json:"resource"`
	// Fence is the grant's fence token.
	Fence uint64 `json:"fence"`
	// Root is the grant's operation root.
	Root string `json:"root"`
	// Seq is the segment sequence number, from 1.
	Seq uint64 `json:"seq"`
}

// OperationID returns the operation ID of the mutation: root + "/" + seq
// (fencegate.OperationID), under which its receipt is found and which is
// forwarded as Fence-Operation-Id.
func (r OpRef) OperationID() string { return fencegate.OperationID(r.Root, r.Seq) }

// Mutation is the marker of the one mutation in flight on a resource.
type Mutation struct {
	OpRef
	// OperationID is Root + "/" + Seq.
	OperationID string `json:"operationId"`
	// PayloadDigest is the digest of the request being applied (method, target, body).
	PayloadDigest string `json:"payloadDigest"`
	// GrantDigest is the digest of the grant the request carried.
	GrantDigest string `json:"grantDigest"`
	// Lease is the grant's lease ID.
	Lease string `json:"lease"`
	// Owner is the workload identity of the Begin that marked the mutation
	// (BeginInput.Owner); "" for a marker stored before owners were kept.
	Owner string `json:"owner,omitempty"`
	// Evidence is the grant's issue evidence.
	Evidence Evidence `json:"evidence"`
	// BegunAt is the Now of the Begin that (last) proceeded.
	BegunAt time.Time `json:"begunAt"`
	// Deadline is when the owner must have committed, aborted or declared
	// the outcome unknown; past it, the marker counts as unknown.
	Deadline time.Time `json:"deadline"`
	// QuietAt is when no attempt of this mutation can take effect at the
	// backend any more: the forward's own deadline plus the backend's
	// declared apply delay (BeginInput.QuietAt), raised by each
	// RetryUnknown. Before it, "not applied" cannot be settled on evidence
	// that a later apply could overtake (DecideResolve, ErrNotQuiet). Zero
	// for a marker stored before QuietAt was kept: see QuietBy.
	QuietAt time.Time `json:"quietAt,omitzero"`
	// Attempts counts the Begins that proceeded for this mutation: 1, plus
	// one per RetryUnknown.
	Attempts uint32 `json:"attempts"`
	// State is IN_FLIGHT or UNKNOWN.
	State MutationState `json:"state"`
	// Cause says why the state is (or was last) UNKNOWN.
	Cause UnknownCause `json:"cause,omitempty"`
	// UnknownSince is when the mutation first became unknown; zero if never.
	UnknownSince time.Time `json:"unknownSince,omitzero"`
}

// Ref returns the mutation's OpRef.
func (m *Mutation) Ref() OpRef { return m.OpRef }

// LegacyQuietDelay is how long after its Deadline a marker without QuietAt
// (stored before QuietAt was kept, or begun without one) is taken to be
// quiet. Its backend's apply delay was never declared, so the bound is a
// conservative one: the longest backend timeout a sidecar accepts.
const LegacyQuietDelay = time.Hour

// QuietBy is the time from which no attempt of the mutation can take effect
// any more: QuietAt, or for a marker without one, Deadline plus
// LegacyQuietDelay.
func (m *Mutation) QuietBy() time.Time {
	if m.QuietAt.IsZero() {
		return m.Deadline.Add(LegacyQuietDelay)
	}
	return m.QuietAt
}

// Expired reports whether the mutation is still marked IN_FLIGHT at or past
// its deadline.
func (m *Mutation) Expired(now time.Time) bool {
	return m.State == MutationInFlight && !now.Before(m.Deadline)
}

// Unsettled reports whether the mutation needs reconciliation at now: it is
// UNKNOWN, or IN_FLIGHT past its deadline.
//
// A nil mutation (none in flight) is settled: a record read from an index
// of mutations in flight may have settled since the index was read.
func (m *Mutation) Unsettled(now time.Time) bool {
	return m != nil && (m.State == MutationUnknown || m.Expired(now))
}

func (m *Mutation) matches(r OpRef) bool {
	return m != nil && m.Resource == r.Resource && m.Fence == r.Fence && m.Root == r.Root && m.Seq == r.Seq
}

// PauseReason says why a resource is paused.
type PauseReason string

// Pause reasons.
const (
	// PauseFenceRegression: the registry went backwards: it issued a token
	// below the highest accepted fence with later evidence, or issued an
	// accepted fence again under another operation root. Writes pause until
	// an operator resumes (the highest fence is kept).
	PauseFenceRegression = PauseReason(fencegate.CodeFenceRegression)
	// PauseOperator: an operator paused the resource.
	PauseOperator PauseReason = "OPERATOR"
	// PauseStoreLoss: the store was found behind its outside anchor (it lost
	// data) and Repair raised the record to the anchor. Begin answers
	// PAUSED with the code FENCE_REGRESSION until an operator resumes.
	PauseStoreLoss PauseReason = "STORE_LOSS"
)

// Pause records why and when a resource was paused.
type Pause struct {
	// Reason is FENCE_REGRESSION, OPERATOR or STORE_LOSS.
	Reason PauseReason `json:"reason"`
	// Detail is free text for operators.
	Detail string `json:"detail,omitempty"`
	// At is when the pause was recorded.
	At time.Time `json:"at"`
	// Fence is, for FENCE_REGRESSION, the regressed (or re-issued) fence that
	// was attempted.
	Fence uint64 `json:"fence,omitempty"`
	// Evidence is, for FENCE_REGRESSION, the regressed grant's evidence.
	Evidence Evidence `json:"evidence,omitzero"`
}

// Record is the per-resource state of the fenced store.
type Record struct {
	// Resource is the canonical resource ID.
	Resource string `json:"resource"`
	// HighestFence is the highest fence ever accepted; it never decreases.
	HighestFence uint64 `json:"highestFence"`
	// Root is the operation root of HighestFence.
	Root string `json:"root,omitempty"`
	// Lease is the lease of HighestFence's grant.
	Lease string `json:"lease,omitempty"`
	// GrantDigest is the digest of HighestFence's grant.
	GrantDigest string `json:"grantDigest,omitempty"`
	// Evidence is the issue evidence of HighestFence's grant, its lineage
	// included.
	Evidence Evidence `json:"evidence"`
	// PriorLineages are the issuer lineages that held the highest fence
	// before Evidence.Lineage, each with the highest fence the store
	// accepted under it, oldest first, at most MaxPriorLineages: a grant
	// of one of them below the highest fence and at most its fence is
	// STALE_OWNER (issued before its registry was superseded by one that
	// continued above); above its fence, or of another lineage, it is
	// FENCE_REGRESSION (a registry that did not continue above: a new one,
	// or the old one rolled back).
	PriorLineages []PriorLineage `json:"priorLineages,omitempty"`
	// AcceptedAt is when HighestFence was accepted (its first Begin).
	AcceptedAt time.Time `json:"acceptedAt,omitzero"`
	// LastSeq is the last committed segment under HighestFence; 0 if none.
	LastSeq uint64 `json:"lastSeq"`
	// Superseded is the fence HighestFence took over from, as the record
	// held it then (its root and last committed segment; nothing was in
	// flight): the store's own proof that those segments committed, which
	// the outside anchor takes when compaction has deleted their receipts
	// (store/anchor). Zero before a second fence, and after a repair.
	Superseded Superseded `json:"superseded,omitzero"`
	// InFlight is the mutation in flight or unknown, if any.
	InFlight *Mutation `json:"inFlight,omitempty"`
	// Pause is set while the resource is paused.
	Pause *Pause `json:"pause,omitempty"`
}

// Superseded is the committed progress of the fence a record's highest
// fence took over from (Record.Superseded).
type Superseded struct {
	Fence   uint64 `json:"fence"`
	Root    string `json:"root,omitempty"`
	LastSeq uint64 `json:"lastSeq"`
}

// PriorLineage is an issuer lineage that held a resource's highest fence
// before the record's current one (Record.PriorLineages).
type PriorLineage struct {
	// Lineage is the registry's issuer lineage.
	Lineage string `json:"lineage"`
	// Fence is the highest fence the store accepted under it, when a grant
	// of another lineage took the highest fence over.
	Fence uint64 `json:"fence"`
}

// priorFence returns the fence a prior lineage l reached, and whether l is
// one of ls.
func priorFence(ls []PriorLineage, l string) (uint64, bool) {
	for _, p := range ls {
		if p.Lineage == l {
			return p.Fence, true
		}
	}
	return 0, false
}

// Clone returns a deep copy of r.
func (r Record) Clone() Record {
	if r.InFlight != nil {
		m := *r.InFlight
		r.InFlight = &m
	}
	if r.Pause != nil {
		p := *r.Pause
		r.Pause = &p
	}
	if r.PriorLineages != nil {
		r.PriorLineages = append([]PriorLineage(nil), r.PriorLineages...)
	}
	return r
}

// Exists reports whether r is a stored record (the zero Record means none).
func (r Record) Exists() bool { return r.Resource != "" }

// Unknown reports whether the resource has a mutation whose outcome is
// declared unknown.
func (r Record) Unknown() bool {
	return r.InFlight != nil && r.InFlight.State == MutationUnknown
}

func normTime(t time.Time) time.Time { return t.Round(0).UTC() }
