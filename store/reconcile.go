package store

import (
	"fmt"
	"time"
)

// MarkUnknownInput declares the outcome of the in-flight mutation unknown: no
// answer, a timeout or a cut connection after the request was sent.
type MarkUnknownInput struct {
	OpRef
	// Now is the caller's current time.
	Now time.Time
}

// AbortInput withdraws the in-flight mutation; only for a request proven
// never sent (e.g. connection refused before any byte went out).
type AbortInput struct {
	OpRef
	// Now is the caller's current time.
	Now time.Time
}

// ResolveInput settles a mutation whose outcome is unknown (reconciliation):
// it was applied, with the response to replay, or it was proven not applied.
//
// "Not applied" is settled only on evidence that a later apply cannot
// overtake: evidence gathered at or after the mutation's quiet time
// (Mutation.QuietBy), or evidence that closes the operation (Closed).
// The evidence's time is Now minus EvidenceAge, on the store's own clock
// (store/redis takes Now from the server's TIME, so a caller's clock that
// runs ahead of the server's cannot settle early).
type ResolveInput struct {
	OpRef
	// Applied says the mutation took effect at the backend.
	Applied bool
	// BackendStatus is the backend's status if one was observed, else 0.
	// Only with Applied.
	BackendStatus int
	// Response is what replays of the segment return. Required with
	// Applied (Status may be 0 to mean BackendStatus), empty otherwise.
	Response StoredResponse
	// EvidenceAge is how long before Now the evidence was gathered (the
	// effect query was sent, the operator looked), measured on the
	// caller's monotonic clock; 0 means at Now. Only "not applied" uses it.
	EvidenceAge time.Duration
	// Closed says the evidence of "not applied" closes the operation: the
	// backend has recorded that it will never apply the mutation (an
	// effect query declared to close it answered 404), so the quiet time
	// does not apply. Only with not applied.
	Closed bool
	// Now is the caller's current time.
	Now time.Time
}

// ResolveResult is what Resolve did.
type ResolveResult struct {
	// Applied echoes the input.
	Applied bool
	// Receipt is the receipt written (or found) when Applied.
	Receipt *Receipt
	// Record is the resource's record afterwards.
	Record Record
}

// DecideMarkUnknown is MarkUnknown as a pure function: the matching marker
// becomes UNKNOWN (cause NO_ANSWER). Repeating it changes nothing.
func DecideMarkUnknown(rec Record, in MarkUnknownInput) (Change, error) {
	if err := in.Validate(); err != nil {
		return Change{}, err
	}
	if !rec.InFlight.matches(in.OpRef) {
		return Change{}, fmt.Errorf("store: mark unknown %s of %q: %w", in.OperationID(), in.Resource, ErrNotInFlight)
	}
	next := rec.Clone()
	m := next.InFlight
	if m.State == MutationUnknown && m.Cause == CauseNoAnswer {
		return Change{Record: next}, nil
	}
	m.State = MutationUnknown
	m.Cause = CauseNoAnswer
	if m.UnknownSince.IsZero() {
		m.UnknownSince = normTime(in.Now)
	}
	return Change{Record: next, WriteRecord: true}, nil
}

// DecideAbort is Abort as a pure function. A matching marker that is IN_FLIGHT,
// or UNKNOWN only because its deadline passed, is cleared; the highest fence
// is kept. If the marker carries earlier attempts (RetryUnknown), it returns
// to UNKNOWN instead: only the latest attempt is proven unsent. A marker the
// caller declared unknown (MarkUnknown) gives ErrOutcomeUnknown.
func DecideAbort(rec Record, in AbortInput) (Change, error) {
	if err := in.Validate(); err != nil {
		return Change{}, err
	}
	if !rec.InFlight.matches(in.OpRef) {
		return Change{}, fmt.Errorf("store: abort %s of %q: %w", in.OperationID(), in.Resource, ErrNotInFlight)
	}
	next := rec.Clone()
	m := next.InFlight
	if m.State == MutationUnknown && m.Cause != CauseDeadline {
		return Change{}, fmt.Errorf("store: abort %s of %q: %w", in.OperationID(), in.Resource, ErrOutcomeUnknown)
	}
	if m.Attempts > 1 {
		m.State = MutationUnknown
		m.Cause = CauseNoAnswer
		if m.UnknownSince.IsZero() {
			m.UnknownSince = normTime(in.Now)
		}
	} else {
		next.InFlight = nil
	}
	return Change{Record: next, WriteRecord: true}, nil
}

// DecideResolve is Resolve as a pure function. existing is the receipt stored
// for (fence, seq), or nil. The matching marker must be UNKNOWN or past its
// deadline (else ErrStillInFlight). Applied writes a receipt (source
// RECONCILED) and advances the segment, at any time; not applied clears the
// marker without advancing, but only on evidence gathered at or after the
// marker's QuietBy (or Closed): earlier, a *NotQuietError (ErrNotQuiet) and
// nothing written, because the mutation may still take effect. Resolving an
// already-settled mutation as applied returns its receipt; as not applied,
// when a receipt exists, ErrConflict.
func DecideResolve(rec Record, existing *Receipt, in ResolveInput, bodyLimit int) (Change, error) {
	if err := in.Validate(); err != nil {
		return Change{}, err
	}
	if m := rec.InFlight; m.matches(in.OpRef) && !m.Unsettled(normTime(in.Now)) {
		return Change{}, fmt.Errorf("store: resolve %s of %q: %w", in.OperationID(), in.Resource, ErrStillInFlight)
	}
	if in.Applied {
		resp := in.Response
		if resp.Status == 0 {
			resp.Status = in.BackendStatus
		}
		return settleApplied(rec, existing, in.OpRef, in.BackendStatus, resp, in.Now, SourceReconciled, BodyLimit(bodyLimit), "resolve")
	}
	if !rec.InFlight.matches(in.OpRef) {
		if existing != nil && existing.Root == in.Root {
			return Change{}, fmt.Errorf("store: resolve %s of %q as not applied: receipt %s exists: %w", in.OperationID(), in.Resource, existing.ID, ErrConflict)
		}
		return Change{}, fmt.Errorf("store: resolve %s of %q: %w", in.OperationID(), in.Resource, ErrNotInFlight)
	}
	if m := rec.InFlight; !in.Closed {
		evidence := normTime(in.Now).Add(-in.EvidenceAge)
		if quiet := m.QuietBy(); evidence.Before(quiet) {
			return Change{}, &NotQuietError{OperationID: m.OperationID, Resource: m.Resource, QuietAt: quiet, Remaining: quiet.Sub(evidence)}
		}
	}
	next := rec.Clone()
	next.InFlight = nil
	return Change{Record: next, WriteRecord: true}, nil
}
