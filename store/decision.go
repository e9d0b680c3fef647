package store

import (
	"time"

	"github.com/fencegate/fencegate"
)

// Decision is Begin's answer. The rejections that are contract codes have the
// code's spelling (fencegate.Code*); PAUSED, BUSY, REPLAY and PROCEED are
// the store's own. BeginResult.Code maps a decision to its problem code.
type Decision string

// MaxOwnerLen is the maximum length in bytes of BeginInput.Owner, a workload
// identity (e.g. a SPIFFE ID).
const MaxOwnerLen = 2048

// Begin's decisions.
const (
	// DecisionProceed: forward the request; the mutation is now in flight and
	// must end in Commit, Abort or MarkUnknown.
	DecisionProceed Decision = "PROCEED"
	// DecisionReplay: the segment was accepted before with the same payload;
	// answer with the stored receipt's response.
	DecisionReplay Decision = "REPLAY"
	// DecisionPaused: the resource is paused (see Record.Pause).
	DecisionPaused Decision = "PAUSED"
	// DecisionMutationUnknown: an earlier mutation's outcome is unknown; the
	// resource awaits reconciliation.
	DecisionMutationUnknown Decision = Decision(fencegate.CodeMutationUnknown)
	// DecisionSegmentConflict: the segment was accepted under the same
	// operation root with another payload; the attempt is quarantined.
	DecisionSegmentConflict Decision = Decision(fencegate.CodeSegmentConflict)
	// DecisionStaleOwner: the fence is below the highest accepted.
	DecisionStaleOwner Decision = Decision(fencegate.CodeStaleOwner)
	// DecisionFenceRegression: the registry went backwards: the fence is
	// below the highest accepted but was issued later, or it was accepted
	// before under another operation root (issued twice). The resource is
	// now paused.
	DecisionFenceRegression Decision = Decision(fencegate.CodeFenceRegression)
	// DecisionSegmentGap: wrong segment order (a new fence not at 1, or not
	// lastSeq+1).
	DecisionSegmentGap Decision = Decision(fencegate.CodeSegmentGap)
	// DecisionBusy: another mutation of the resource is in flight; wait until
	// it settles or answer with Retry-After.
	DecisionBusy Decision = "BUSY"
)

// BeginInput is an authenticated attempt to mutate a resource. The caller has
// verified the grant and its status; the store decides on fence and order.
type BeginInput struct {
	// Resource is the canonical resource ID.
	Resource string
	// Fence is the grant's fence token (>= 1).
	Fence uint64
	// Root is the grant's operation root.
	Root string
	// Seq is the segment sequence number (Fence-Segment, >= 1).
	Seq uint64
	// PayloadDigest is the digest of the request: method, target and body.
	PayloadDigest string
	// GrantDigest is the digest of the grant.
	GrantDigest string
	// Lease is the grant's lease ID.
	Lease string
	// Owner is the caller's workload identity, which the caller has checked
	// equals the grant's owner. It is kept with the mutation and its receipt,
	// so that receipts are shown only to the owner whose grant produced them.
	Owner string
	// Evidence is the grant's issue evidence (issuer epoch, backend revision).
	Evidence Evidence
	// Now is the caller's current time.
	Now time.Time
	// Deadline bounds the mutation: after it an un-settled marker counts as
	// MUTATION_UNKNOWN. Must be after Now, within MaxInFlightWindow.
	Deadline time.Time
	// QuietAt is the caller's promise that no attempt of the mutation can
	// take effect after it: the end of the forward's own deadline (taken
	// before Begin) plus the time the backend may still apply a request it
	// received. It becomes Mutation.QuietAt (a RetryUnknown raises it, never
	// lowers it); "not applied" is not settled before it (DecideResolve).
	// Must be after Now, within MaxInFlightWindow; zero means unknown, and
	// the marker is then quiet only LegacyQuietDelay after its Deadline.
	QuietAt time.Time
	// RetryUnknown asks to forward again the exact mutation whose outcome is
	// unknown (same fence, root, seq and payload digest); set it only when
	// the route's backend honours Idempotency-Key.
	RetryUnknown bool
}

// Ref returns the input's OpRef.
func (in BeginInput) Ref() OpRef {
	return OpRef{Resource: in.Resource, Fence: in.Fence, Root: in.Root, Seq: in.Seq}
}

// BeginResult is Begin's answer.
type BeginResult struct {
	// Decision is what to do with the request.
	Decision Decision
	// Detail explains the decision for logs and problem details.
	Detail string
	// Record is the resource's record after the decision.
	Record Record
	// Prior is the resource's record as the decision read it, before any
	// change (the zero Record if there was none). With Record it is the
	// step an outside anchor checks (fencegate.AnchorBegin: Prior must
	// cover the anchor before the mutation is forwarded).
	Prior Record
	// Mutation is, for PROCEED, the marker now in flight; for BUSY and
	// MUTATION_UNKNOWN, the mutation that blocks (with its deadline).
	Mutation *Mutation
	// Receipt is, for REPLAY, the stored receipt to answer with; for
	// SEGMENT_CONFLICT, the receipt the attempt conflicts with; for
	// FENCE_REGRESSION, the receipt accepted under another root, if that is
	// what proved the double issue.
	Receipt *Receipt
	// Quarantine is, for SEGMENT_CONFLICT, the quarantine entry as stored.
	Quarantine *Quarantine
}

// Change is what a transition asks a backend to write, all in one atomic
// step. A zero Change writes nothing. The pure functions (Decide*)
// never modify their inputs, and what they return shares no memory with
// their inputs nor, for Decide, between the BeginResult and the Change, so
// a backend may store a Change as is.
type Change struct {
	// Record is the resource's record after the transition.
	Record Record
	// WriteRecord says Record must be stored.
	WriteRecord bool
	// Receipt is the receipt written (WriteReceipt) or found (an idempotent
	// repeat).
	Receipt *Receipt
	// WriteReceipt says Receipt must be stored (and indexed by operation ID).
	WriteReceipt bool
	// Quarantine, when set, must be merged (Quarantine.Merge) with any stored
	// entry of the same ID and stored.
	Quarantine *Quarantine
	// Enforcement, when set, is the enforcement ledger entry to store
	// (DecideEnforcement).
	Enforcement *Enforcement
	// Trust is the whole pin set to store in place of the stored one, by
	// kid (DecideTrust), when WriteTrust is set.
	Trust      []TrustedKey
	WriteTrust bool
	// TrimKeep, when above 0, asks the transaction that writes Receipt to
	// delete the resource's oldest receipts beyond the newest TrimKeep
	// (Tx.TrimReceipts), at most MaxTrimPerCommit of them (a Commit with
	// CommitInput.KeepReceipts).
	TrimKeep int
}

// Writes reports whether the change writes anything.
func (c Change) Writes() bool {
	return c.WriteRecord || c.WriteReceipt || c.Quarantine != nil || c.Enforcement != nil || c.WriteTrust
}
