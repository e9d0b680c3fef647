package client

import (
	"errors"
	"fmt"
	"time"

	"github.com/fencegate/fencegate"
)

// Sentinels, one per problem code of the registry API: each is the
// fencegate.Code itself (a Code is an error). An *Error matches the
// sentinel of its code, under either name: errors.Is(err,
// client.ErrLeaseHeld) and errors.Is(err, fencegate.CodeLeaseHeld).
var (
	// ErrInvalidRequest: a malformed field (resource, request ID, TTL, wait ...).
	ErrInvalidRequest error = fencegate.CodeInvalidRequest
	// ErrIdentityRequired: no caller workload identity could be established
	// (registry or sidecar).
	ErrIdentityRequired error = fencegate.CodeIdentityRequired
	// ErrNotOwner: the caller is not the lease's owner.
	ErrNotOwner error = fencegate.CodeNotOwner
	// ErrPolicyDenied: the resource's policy refuses this owner, TTL or operation class.
	ErrPolicyDenied error = fencegate.CodePolicyDenied
	// ErrLeaseHeld: the resource is held by another lease (a waiting
	// acquire's wait ran out).
	ErrLeaseHeld error = fencegate.CodeLeaseHeld
	// ErrLeaseNotHeld: a renewal of a lease that is expired, released or
	// revoked; the problem's "state" member says which.
	ErrLeaseNotHeld error = fencegate.CodeLeaseNotHeld
	// ErrRequestConflict: the request ID was used for another acquire.
	ErrRequestConflict error = fencegate.CodeRequestConflict
	// ErrNotFound: no such lease, grant or request ID.
	ErrNotFound error = fencegate.CodeNotFound
	// ErrAdminRequired: an admin call without admin rights.
	ErrAdminRequired error = fencegate.CodeAdminRequired
	// ErrBackendUnavailable: the registry's backend (or the sidecar's
	// backend, before anything was sent) is unavailable.
	ErrBackendUnavailable error = fencegate.CodeBackendUnavailable
	// ErrStoreLost: a fenced store presented a generation that is not the
	// one the registry anchored: it lost its data or is another data set.
	// The problem's "anchored" and "presented" members name both; every
	// anchor call of the store is refused until an operator acknowledges
	// the loss (Client.AcknowledgeStoreLoss).
	ErrStoreLost error = fencegate.CodeStoreLost
)

// ErrUnexpectedResponse is returned for an answer that is neither the
// expected JSON nor a problem document.
var ErrUnexpectedResponse = errors.New("client: unexpected response")

// Error is a problem answered by the server.
type Error struct {
	StatusCode int
	Problem    *fencegate.Problem
}

// Error implements error.
func (e *Error) Error() string {
	return fmt.Sprintf("client: %d %s", e.StatusCode, e.Problem.Error())
}

// Code is the problem's stable code.
func (e *Error) Code() fencegate.Code { return e.Problem.Code }

// Is matches the sentinel of the problem's code: the fencegate.Code (and
// so the client.Err* name of it).
func (e *Error) Is(target error) bool { return isCode(target, e.Problem) }

// isCode reports whether target is the code of problem p.
func isCode(target error, p *fencegate.Problem) bool {
	c, ok := target.(fencegate.Code)
	return ok && p != nil && c == p.Code
}

// Sentinels of the sidecar's problem codes, each the fencegate.Code itself:
// a *RejectionError (and an *Error with the same code) matches its code's
// sentinel, so errors.Is(err, client.ErrStaleOwner) and errors.Is(err,
// fencegate.CodeStaleOwner) work through any %w wrapping.
// IDENTITY_REQUIRED and BACKEND_UNAVAILABLE, which the registry also
// answers, match ErrIdentityRequired and ErrBackendUnavailable above.
var (
	// ErrGrantRequired: the route is protected and the request had no grant.
	ErrGrantRequired error = fencegate.CodeGrantRequired
	// ErrGrantInvalid: the grant is malformed, oversized, of an unknown key,
	// of a refused algorithm, badly signed or of the wrong schema.
	ErrGrantInvalid error = fencegate.CodeGrantInvalid
	// ErrOwnerMismatch: the caller's workload identity is not the grant's owner.
	ErrOwnerMismatch error = fencegate.CodeOwnerMismatch
	// ErrResourceMismatch: the route's resource is not the grant's.
	ErrResourceMismatch error = fencegate.CodeResourceMismatch
	// ErrPolicyMismatch: the grant's policy generation is not the current one.
	ErrPolicyMismatch error = fencegate.CodePolicyMismatch
	// ErrGrantNotHeld: the registry says the grant expired, was released or revoked.
	ErrGrantNotHeld error = fencegate.CodeGrantNotHeld
	// ErrEpochRevoked: the grant's issuer epoch was revoked.
	ErrEpochRevoked error = fencegate.CodeEpochRevoked
	// ErrStatusStale: the Fence-Status proof is expired, not for this grant,
	// or not fresh enough.
	ErrStatusStale error = fencegate.CodeStatusStale
	// ErrStaleOwner: a higher fence was already accepted for the resource;
	// this worker is no longer the owner.
	ErrStaleOwner error = fencegate.CodeStaleOwner
	// ErrSegmentGap: the segment is out of order (a new fence must start at
	// 1, a known one continue at lastSeq+1).
	ErrSegmentGap error = fencegate.CodeSegmentGap
	// ErrSegmentConflict: an accepted (fence, segment) was sent again with
	// another payload; the attempt was quarantined.
	ErrSegmentConflict error = fencegate.CodeSegmentConflict
	// ErrFenceRegression: the registry issued a fence that went backwards;
	// the resource is paused.
	ErrFenceRegression error = fencegate.CodeFenceRegression
	// ErrMutationUnknown: an earlier mutation's outcome is unknown and the
	// resource awaits reconciliation (see Sidecar.Recover).
	ErrMutationUnknown error = fencegate.CodeMutationUnknown
	// ErrRegistryUnavailable: the sidecar could not establish the grant's
	// status and failed closed.
	ErrRegistryUnavailable error = fencegate.CodeRegistryUnavailable
	// ErrFenceHeaderInvalid: a Fence-* header is duplicated or malformed.
	ErrFenceHeaderInvalid error = fencegate.CodeFenceHeaderInvalid
	// ErrInvalidResource: the route's path does not make a valid resource ID.
	ErrInvalidResource error = fencegate.CodeInvalidResource
	// ErrBodyTooLarge: the body exceeds the route's limit.
	ErrBodyTooLarge error = fencegate.CodeBodyTooLarge
	// ErrBodyUnreadable: the sidecar could not read the whole body.
	ErrBodyUnreadable error = fencegate.CodeBodyUnreadable
	// ErrDigestMismatch: Content-Digest does not match the body.
	ErrDigestMismatch error = fencegate.CodeDigestMismatch
	// ErrRouteNotProtected: the mutation matched no protected route.
	ErrRouteNotProtected error = fencegate.CodeRouteNotProtected
	// ErrResourceBusy: another mutation of the resource stayed in flight.
	ErrResourceBusy error = fencegate.CodeResourceBusy
	// ErrResourcePaused: an operator paused the resource.
	ErrResourcePaused error = fencegate.CodeResourcePaused
	// ErrStoreUnavailable: the sidecar's fenced store failed; nothing was forwarded.
	ErrStoreUnavailable error = fencegate.CodeStoreUnavailable
	// ErrMethodOverrideRefused: the request carried a method-override header;
	// send the real method instead.
	ErrMethodOverrideRefused error = fencegate.CodeMethodOverrideRefused
	// ErrUpgradeRefused: the request asked for a protocol upgrade that the
	// sidecar's configuration does not allow (h2c never is).
	ErrUpgradeRefused error = fencegate.CodeUpgradeRefused
	// ErrReplayIncomplete: the segment was accepted (it has a receipt) but
	// the sidecar did not keep the backend's whole answer, so a replay
	// cannot give it back. A *ReplayIncompleteError carries the receipt ID
	// and the backend's status. It is neither a rejection nor an unknown
	// outcome: the write is accepted, do not send it again.
	ErrReplayIncomplete error = fencegate.CodeReplayIncomplete
)

// Errors of the lease state machine and the worker helpers.
var (
	// ErrNotHolding: the Holder does not know that it holds its lease (its
	// state is not HELD or RENEWING, or its local safety deadline passed), so
	// the SDK refused to produce an effect and sent nothing. A *StateError
	// carries the state.
	ErrNotHolding = errors.New("client: not holding the lease")
	// ErrLocalDeadline: the local safety deadline passed without a confirmed
	// renewal. It is the cause of the OWNERSHIP_UNKNOWN transition it forces.
	ErrLocalDeadline = errors.New("client: local lease deadline passed without a confirmed renewal")
	// ErrAcquireUnknown: an acquire's outcome could not be established (its
	// answer was lost and its request ID could not be looked up). An
	// *AcquireUnknownError says from when a grant of it, if any, has expired.
	ErrAcquireUnknown = errors.New("client: acquire outcome unknown")
	// ErrOutcomeUnknown: a protected mutation was (or may have been) sent
	// and no answer came back; it may have been applied. An
	// *OutcomeUnknownError carries its operation ID for Sidecar.Recover.
	ErrOutcomeUnknown = errors.New("client: mutation outcome unknown")
	// ErrNotSent: a mutation never left the process (no connection to the
	// sidecar could be made); it had no effect and may be sent again.
	ErrNotSent = errors.New("client: request not sent")
	// ErrNoReceipt: the sidecar holds no receipt for the operation. That does
	// not prove it was not applied: the resource may be awaiting
	// reconciliation (MUTATION_UNKNOWN).
	ErrNoReceipt = errors.New("client: no receipt for the operation")
	// ErrInvalidSegment: a segment number is not a decimal integer in
	// 1..fencegate.MaxSeq. It is fencegate.ErrInvalidSegment.
	ErrInvalidSegment = fencegate.ErrInvalidSegment
	// ErrInvalidHandoff: message headers do not hold a consistent hand-off
	// (fence, operation root, segment).
	ErrInvalidHandoff = errors.New("client: invalid hand-off headers")
	// ErrBackendStatus: a segment was accepted by the sidecar (it has a
	// receipt) but the backend answered with an error status, so an ordered
	// run stopped after it.
	ErrBackendStatus = errors.New("client: backend answered with an error status")
)

// RejectionError is a sidecar's refusal of a protected mutation: an RFC
// 9457 problem with one of the Code* codes. It matches the sentinel of its
// code (errors.Is(err, client.ErrStaleOwner)). Nothing was forwarded to
// the backend, except for MUTATION_UNKNOWN, which reports an earlier
// mutation's unknown outcome.
type RejectionError struct {
	// StatusCode is the HTTP status (409 for STALE_OWNER, ...).
	StatusCode int
	// Problem is the problem document (Problem.Code, Problem.Detail and
	// extension members such as "highestFence" in Problem.Extra).
	Problem *fencegate.Problem
	// RetryAfter is the Retry-After header, if any.
	RetryAfter time.Duration
	// Method and URL are the request's.
	Method, URL string
	// Resource, Seq and OperationID identify the refused segment.
	Resource    string
	Seq         uint64
	OperationID string
}

// Error implements error.
func (e *RejectionError) Error() string {
	return fmt.Sprintf("client: %s %s (segment %d): sidecar refused: %d %s", e.Method, e.URL, e.Seq, e.StatusCode, e.Problem.Error())
}

// Code is the problem's stable code.
func (e *RejectionError) Code() fencegate.Code { return e.Problem.Code }

// Is matches the sentinel of the problem's code: the fencegate.Code (and
// so the client.Err* name of it).
func (e *RejectionError) Is(target error) bool { return isCode(target, e.Problem) }

// StateError is returned, without any network I/O, when an effect is
// asked of a Holder that does not know that it holds its lease. It matches
// ErrNotHolding and unwraps to the cause of the state (ErrLocalDeadline,
// a transport error, a registry answer ...).
type StateError struct {
	State State
	Cause error
}

// Error implements error.
func (e *StateError) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("client: not holding the lease (state %s): %v", e.State, e.Cause)
	}
	return fmt.Sprintf("client: not holding the lease (state %s)", e.State)
}

// Is matches ErrNotHolding.
func (e *StateError) Is(target error) bool { return target == ErrNotHolding }

// Unwrap returns the cause.
func (e *StateError) Unwrap() error { return e.Cause }

// AcquireUnknownError reports an acquire whose answer was lost and whose
// request ID could not be looked up. The SDK did not start another request
// ID meanwhile (never a second identity in parallel): it waited until any
// grant of the lost attempt must have expired, or until its context ended.
type AcquireUnknownError struct {
	// RequestID is the lost attempt's request ID: look it up later with
	// Client.Lookup to reconcile.
	RequestID string
	// SentAt is when the lost attempt was sent (local clock).
	SentAt time.Time
	// SafeAfter is when a grant of the lost attempt, if any, has expired
	// (local clock, sent time + wait + TTL + safety margin). Before then,
	// do not start another identity for the resource.
	SafeAfter time.Time
	// Err is the last error seen.
	Err error
}

// Error implements error.
func (e *AcquireUnknownError) Error() string {
	return fmt.Sprintf("client: acquire outcome unknown for request %s (any grant of it has expired by %s): %v",
		e.RequestID, e.SafeAfter.Format(time.RFC3339Nano), e.Err)
}

// Is matches ErrAcquireUnknown.
func (e *AcquireUnknownError) Is(target error) bool { return target == ErrAcquireUnknown }

// Unwrap returns the last error seen.
func (e *AcquireUnknownError) Unwrap() error { return e.Err }

// OutcomeUnknownError is a protected mutation that was (or may have been)
// sent without an answer coming back. Recover it by its operation ID
// (Sidecar.Recover, Transport.Recover); never assume it was not applied.
type OutcomeUnknownError struct {
	Method, URL string
	Resource    string
	Seq         uint64
	OperationID string
	Err         error
}

// Error implements error.
func (e *OutcomeUnknownError) Error() string {
	return fmt.Sprintf("client: %s %s: outcome of operation %s unknown: %v", e.Method, e.URL, e.OperationID, e.Err)
}

// Is matches ErrOutcomeUnknown.
func (e *OutcomeUnknownError) Is(target error) bool { return target == ErrOutcomeUnknown }

// Unwrap returns the transport error.
func (e *OutcomeUnknownError) Unwrap() error { return e.Err }

// ReplayIncompleteError is the answer to a segment sent again after the
// sidecar accepted it, when the sidecar did not keep the backend's whole
// answer (REPLAY_INCOMPLETE: the body was over the route's
// responseStoreLimit, or a header did not fit its store). The segment IS
// accepted, under ReceiptID: the backend answered it with BackendStatus
// once, and nothing was forwarded again. It matches ErrReplayIncomplete,
// never a rejection's sentinel nor ErrOutcomeUnknown. Go on with the next
// segment; if the answer's body is needed, read the resource from the
// backend.
type ReplayIncompleteError struct {
	// Method and URL are the request's.
	Method, URL string
	// Resource, Seq and OperationID identify the accepted segment.
	Resource    string
	Seq         uint64
	OperationID string
	// ReceiptID is the segment's receipt (Fence-Receipt).
	ReceiptID string
	// BackendStatus is the status the backend answered the write with
	// (0 if the sidecar did not say).
	BackendStatus int
	// StatusCode is the HTTP status of the sidecar's answer (409).
	StatusCode int
	// Problem is the sidecar's problem document.
	Problem *fencegate.Problem
}

// Error implements error.
func (e *ReplayIncompleteError) Error() string {
	return fmt.Sprintf("client: %s %s (segment %d): accepted under receipt %s (backend status %d), but the sidecar cannot replay its whole answer: %s",
		e.Method, e.URL, e.Seq, e.ReceiptID, e.BackendStatus, e.Problem.Error())
}

// Is matches ErrReplayIncomplete.
func (e *ReplayIncompleteError) Is(target error) bool { return target == ErrReplayIncomplete }
