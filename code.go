package fencegate

import "net/http"

// Code is a stable problem code: the "code" member of every RFC 9457
// problem the registry and the sidecar answer with. Clients switch on it.
//
// A Code is also an error: it is the sentinel of its code. The errors the
// SDK (package client) and package verify return match the Code they carry,
// so errors.Is(err, fencegate.CodeStaleOwner) works through any %w
// wrapping; the SDK's and verify's sentinels (client.ErrStaleOwner,
// verify.ErrGrantInvalid, ...) are these values.
type Code string

// Error implements error: the code itself ("STALE_OWNER"), so a Code
// formats the same whether it is printed as a string or as an error.
func (c Code) Error() string { return string(c) }

// Codes of the request contract (docs/design.md), answered by the sidecar.
const (
	// CodeGrantRequired: the route is protected and the request had no grant.
	CodeGrantRequired Code = "GRANT_REQUIRED"
	// CodeGrantInvalid: the grant (or a status proof) is malformed,
	// oversized, signed by an unknown kid, with an algorithm that is not
	// allowed, with a bad signature, or has the wrong schema or claims.
	CodeGrantInvalid Code = "GRANT_INVALID"
	// CodeOwnerMismatch: the caller's workload identity is not the grant's owner.
	CodeOwnerMismatch Code = "OWNER_MISMATCH"
	// CodeResourceMismatch: the route's resource is not the grant's.
	CodeResourceMismatch Code = "RESOURCE_MISMATCH"
	// CodePolicyMismatch: the grant's policy generation is not the current one.
	CodePolicyMismatch Code = "POLICY_MISMATCH"
	// CodeGrantNotHeld: the registry says the grant expired, was released or revoked.
	CodeGrantNotHeld Code = "GRANT_NOT_HELD"
	// CodeEpochRevoked: the grant's issuer epoch was revoked.
	CodeEpochRevoked Code = "EPOCH_REVOKED"
	// CodeStatusStale: the status proof is expired, not for this grant, or
	// not fresh enough.
	CodeStatusStale Code = "STATUS_STALE"
	// CodeStaleOwner: a higher fence was already accepted for the resource.
	CodeStaleOwner Code = "STALE_OWNER"
	// CodeSegmentGap: the segment is out of order.
	CodeSegmentGap Code = "SEGMENT_GAP"
	// CodeSegmentConflict: an accepted (fence, segment) came again with
	// another payload; the attempt was quarantined.
	CodeSegmentConflict Code = "SEGMENT_CONFLICT"
	// CodeFenceRegression: the registry issued a fence that went backwards
	// (or issued one twice); the resource is paused.
	CodeFenceRegression Code = "FENCE_REGRESSION"
	// CodeMutationUnknown: an earlier mutation's outcome is unknown; the
	// resource awaits reconciliation.
	CodeMutationUnknown Code = "MUTATION_UNKNOWN"
	// CodeRegistryUnavailable: the grant's status could not be established.
	CodeRegistryUnavailable Code = "REGISTRY_UNAVAILABLE"
)

// The sidecar's own codes.
const (
	// CodeIdentityRequired: no caller workload identity could be
	// established (the registry answers it too).
	CodeIdentityRequired Code = "IDENTITY_REQUIRED"
	// CodeFenceHeaderInvalid: a Fence-* header is duplicated or malformed.
	CodeFenceHeaderInvalid Code = "FENCE_HEADER_INVALID"
	// CodeInvalidResource: the route's path does not make a valid resource ID.
	CodeInvalidResource Code = "INVALID_RESOURCE"
	// CodeBodyTooLarge: the body exceeds the limit (the registry answers it too).
	CodeBodyTooLarge Code = "BODY_TOO_LARGE"
	// CodeBodyUnreadable: the whole body could not be read.
	CodeBodyUnreadable Code = "BODY_UNREADABLE"
	// CodeDigestMismatch: Content-Digest does not match the body.
	CodeDigestMismatch Code = "DIGEST_MISMATCH"
	// CodeRouteNotProtected: the mutation matched no protected route.
	CodeRouteNotProtected Code = "ROUTE_NOT_PROTECTED"
	// CodeResourceBusy: another mutation of the resource stayed in flight.
	CodeResourceBusy Code = "RESOURCE_BUSY"
	// CodeResourcePaused: an operator paused the resource.
	CodeResourcePaused Code = "RESOURCE_PAUSED"
	// CodeStoreUnavailable: the fenced store failed; nothing was forwarded.
	CodeStoreUnavailable Code = "STORE_UNAVAILABLE"
	// CodeBackendUnavailable: the backend is unavailable. The sidecar
	// answers it with 502 (its backend, before anything was sent), the
	// registry with 503 (its coordination backend).
	CodeBackendUnavailable Code = "BACKEND_UNAVAILABLE"
	// CodeMethodOverrideRefused: the request carried a method-override
	// header (X-HTTP-Method-Override, X-HTTP-Method, X-Method-Override).
	CodeMethodOverrideRefused Code = "METHOD_OVERRIDE_REFUSED"
	// CodeUpgradeRefused: the request asked for a protocol upgrade (Upgrade,
	// h2c, HTTP2-Settings, the HTTP/2 preface) that no upgrades entry allows.
	CodeUpgradeRefused Code = "UPGRADE_REFUSED"
	// CodeReplayIncomplete: a replay of an accepted segment whose stored
	// answer is incomplete (its body was over the route's
	// responseStoreLimit, or a header did not fit the store). It is not a
	// rejection: the segment was accepted (the answer carries Fence-Receipt
	// and Fence-Replayed: true, and the problem's receiptId, operationId
	// and backendStatus), only the backend's answer cannot be given again.
	CodeReplayIncomplete Code = "REPLAY_INCOMPLETE"
	// CodeConflict: an admin request conflicts with the resource's state
	// (the sidecar's admin API), or, at the registry, an acknowledgement of
	// a store loss names a generation the store never presented.
	CodeConflict Code = "CONFLICT"
	// CodeMayStillApply: an admin request to settle an unknown mutation as
	// not applied before its quiet time: the backend may still apply it
	// (the forward's deadline plus backend.maxApplyDelay has not passed).
	// The problem carries quietAt, operationId and Retry-After; "applied"
	// may be settled at any time.
	CodeMayStillApply Code = "MAY_STILL_APPLY"
)

// Codes of the registry API (IDENTITY_REQUIRED, BODY_TOO_LARGE,
// BACKEND_UNAVAILABLE and CONFLICT above are answered by both).
const (
	// CodeInvalidRequest: a malformed field (resource, request ID, TTL, wait ...).
	CodeInvalidRequest Code = "INVALID_REQUEST"
	// CodeNotOwner: the caller is not the lease's owner.
	CodeNotOwner Code = "NOT_OWNER"
	// CodePolicyDenied: the resource's policy refuses this owner, TTL or
	// operation class.
	CodePolicyDenied Code = "POLICY_DENIED"
	// CodeLeaseHeld: the resource is held by another lease.
	CodeLeaseHeld Code = "LEASE_HELD"
	// CodeLeaseNotHeld: a renewal of a lease that is expired, released or revoked.
	CodeLeaseNotHeld Code = "LEASE_NOT_HELD"
	// CodeRequestConflict: the request ID was used for another acquire.
	CodeRequestConflict Code = "REQUEST_CONFLICT"
	// CodeNotFound: no such lease, grant, request ID, receipt or route.
	CodeNotFound Code = "NOT_FOUND"
	// CodeMethodNotAllowed: the route does not take this method.
	CodeMethodNotAllowed Code = "METHOD_NOT_ALLOWED"
	// CodeUnsupportedMedia: the body is not application/json.
	CodeUnsupportedMedia Code = "UNSUPPORTED_MEDIA_TYPE"
	// CodeAdminRequired: an admin call without admin rights.
	CodeAdminRequired Code = "ADMIN_REQUIRED"
	// CodeFenceExhausted: the resource's fence sequence is exhausted.
	CodeFenceExhausted Code = "FENCE_EXHAUSTED"
	// CodeInternal: an internal error (a recovered panic).
	CodeInternal Code = "INTERNAL"
	// CodeStoreLost: a fenced store's generation is not the one the
	// registry anchored (anchor.go): the store lost its data or is another
	// data set. Every anchor step of that store is refused until an
	// operator acknowledges the loss.
	CodeStoreLost Code = "STORE_LOST"
)

// statusOf is the one table of the HTTP status of each code.
var statusOf = map[Code]int{
	CodeGrantRequired:       http.StatusPreconditionRequired,
	CodeGrantInvalid:        http.StatusUnauthorized,
	CodeOwnerMismatch:       http.StatusForbidden,
	CodeResourceMismatch:    http.StatusForbidden,
	CodePolicyMismatch:      http.StatusForbidden,
	CodeGrantNotHeld:        http.StatusForbidden,
	CodeEpochRevoked:        http.StatusForbidden,
	CodeStatusStale:         http.StatusForbidden,
	CodeStaleOwner:          http.StatusConflict,
	CodeSegmentGap:          http.StatusConflict,
	CodeSegmentConflict:     http.StatusConflict,
	CodeFenceRegression:     http.StatusConflict,
	CodeMutationUnknown:     http.StatusConflict,
	CodeRegistryUnavailable: http.StatusServiceUnavailable,

	CodeIdentityRequired:      http.StatusUnauthorized,
	CodeFenceHeaderInvalid:    http.StatusBadRequest,
	CodeInvalidResource:       http.StatusBadRequest,
	CodeBodyTooLarge:          http.StatusRequestEntityTooLarge,
	CodeBodyUnreadable:        http.StatusBadRequest,
	CodeDigestMismatch:        http.StatusBadRequest,
	CodeRouteNotProtected:     http.StatusForbidden,
	CodeResourceBusy:          http.StatusServiceUnavailable,
	CodeResourcePaused:        http.StatusConflict,
	CodeStoreUnavailable:      http.StatusServiceUnavailable,
	CodeBackendUnavailable:    http.StatusBadGateway,
	CodeMethodOverrideRefused: http.StatusBadRequest,
	CodeUpgradeRefused:        http.StatusBadRequest,
	// 409, not 2xx: the body is not the backend's answer. Not 502 either:
	// nothing failed now and the outcome is known (accepted), and a 5xx
	// reads as "maybe not applied, retry" to generic clients and retry
	// layers; a retry only replays this answer. 409 says what it is: the
	// resource's state (this segment is accepted, its answer not kept
	// whole) decides the answer, as for the other segment-state codes.
	CodeReplayIncomplete: http.StatusConflict,
	CodeConflict:         http.StatusConflict,
	CodeMayStillApply:    http.StatusConflict,

	CodeInvalidRequest:   http.StatusBadRequest,
	CodeNotOwner:         http.StatusForbidden,
	CodePolicyDenied:     http.StatusForbidden,
	CodeLeaseHeld:        http.StatusConflict,
	CodeLeaseNotHeld:     http.StatusConflict,
	CodeRequestConflict:  http.StatusConflict,
	CodeNotFound:         http.StatusNotFound,
	CodeMethodNotAllowed: http.StatusMethodNotAllowed,
	CodeUnsupportedMedia: http.StatusUnsupportedMediaType,
	CodeAdminRequired:    http.StatusForbidden,
	CodeFenceExhausted:   http.StatusServiceUnavailable,
	CodeStoreLost:        http.StatusConflict,
	CodeInternal:         http.StatusInternalServerError,
}

// Status is the HTTP status a problem with code c is answered with. An
// unknown code is 500: a code that was never given a status is a bug of the
// server that answers it, never a reason to write an invalid status.
func (c Code) Status() int {
	if s, ok := statusOf[c]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Known reports whether c is one of the codes of this package.
func (c Code) Known() bool {
	_, ok := statusOf[c]
	return ok
}
