package store

import (
	"errors"

	"github.com/fencegate/fencegate"
)

// Code is the problem code the sidecar answers a Begin with, the one
// mapping from store decisions to the contract's codes: "" for PROCEED
// and REPLAY (not rejections), RESOURCE_BUSY for BUSY, FENCE_REGRESSION
// for a resource paused by a fence regression or a store loss (Repair) and
// RESOURCE_PAUSED for one an operator paused, the decision's own code for the contract's codes, and
// STORE_UNAVAILABLE (fail closed) for a decision it does not know.
func (r BeginResult) Code() fencegate.Code {
	switch r.Decision {
	case DecisionProceed, DecisionReplay:
		return ""
	case DecisionBusy:
		return fencegate.CodeResourceBusy
	case DecisionPaused:
		if p := r.Record.Pause; p != nil && (p.Reason == PauseFenceRegression || p.Reason == PauseStoreLoss) {
			return fencegate.CodeFenceRegression
		}
		return fencegate.CodeResourcePaused
	case DecisionMutationUnknown, DecisionSegmentConflict, DecisionStaleOwner, DecisionFenceRegression, DecisionSegmentGap:
		return fencegate.Code(r.Decision)
	}
	return fencegate.CodeStoreUnavailable
}

// ErrorCode is the problem code a store error is answered with where an
// API hands it to a caller (the sidecar's own API and its admin API): the
// one mapping from the store's error kinds to the contract's codes, whose
// statuses (Code.Status) are the answer's. Bad input is INVALID_REQUEST
// (400), an unknown resource, receipt or mutation NOT_FOUND (404), a call
// that contradicts the stored state (ErrConflict, ErrNotPaused,
// ErrStillInFlight, ErrNotInFlight) CONFLICT (409), and anything else,
// a failure of the store itself, STORE_UNAVAILABLE (503).
func ErrorCode(err error) fencegate.Code {
	switch {
	case errors.Is(err, ErrInvalidInput):
		return fencegate.CodeInvalidRequest
	case errors.Is(err, ErrNotFound):
		return fencegate.CodeNotFound
	case errors.Is(err, ErrConflict), errors.Is(err, ErrNotPaused), errors.Is(err, ErrStillInFlight), errors.Is(err, ErrNotInFlight):
		return fencegate.CodeConflict
	default:
		return fencegate.CodeStoreUnavailable
	}
}

// requestFields are the BeginInput fields taken from a request or its
// grant, with the code that refuses them: the segment, the resource, the
// grant's claims (an oversized or malformed claim of an authentic grant is
// GRANT_INVALID, as an oversized grant is) and the caller's identity.
var requestFields = map[string]fencegate.Code{
	"seq":         fencegate.CodeFenceHeaderInvalid,
	"resource":    fencegate.CodeInvalidResource,
	"fence":       fencegate.CodeGrantInvalid,
	"root":        fencegate.CodeGrantInvalid,
	"lease":       fencegate.CodeGrantInvalid,
	"grantDigest": fencegate.CodeGrantInvalid,
	"owner":       fencegate.CodeIdentityRequired,
}

// RequestCode is the problem code of a BeginInput the store's rules refuse
// (BeginInput.Validate), by the field it came from; fromRequest is false
// for a field the caller computes (times, the payload digest), which
// cannot be the client's fault: it is still answered FENCE_HEADER_INVALID
// (the request cannot be fenced), never as an outage.
func (e *InputError) RequestCode() (code fencegate.Code, fromRequest bool) {
	code, fromRequest = requestFields[e.Field]
	if !fromRequest {
		code = fencegate.CodeFenceHeaderInvalid
	}
	return code, fromRequest
}

// Members are the problem members that explain a refusal, as the sidecar
// and library mode answer it: the operation ID of a mutation whose outcome
// is unknown, the quarantine entry of a conflict, the highest fence of a
// stale owner or a regression, the last segment of a gap. Known reports
// whether the decision is one the contract knows (Code maps any other to
// STORE_UNAVAILABLE).
func (r BeginResult) Members() (members map[string]any, known bool) {
	members = map[string]any{}
	switch r.Decision {
	case DecisionMutationUnknown:
		if r.Mutation != nil {
			members["operationId"] = r.Mutation.OperationID
		}
	case DecisionSegmentConflict:
		if r.Quarantine != nil {
			members["quarantineId"] = r.Quarantine.ID
		}
	case DecisionStaleOwner, DecisionFenceRegression:
		members["highestFence"] = r.Record.HighestFence
	case DecisionSegmentGap:
		members["lastSegment"] = r.Record.LastSeq
	case DecisionPaused, DecisionBusy, DecisionProceed, DecisionReplay:
	default:
		return members, false
	}
	return members, true
}
