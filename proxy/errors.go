package proxy

import (
	"errors"
	"net/http"

	"github.com/fencegate/fencegate/internal/problem"
	"github.com/fencegate/fencegate/verify"
)

// Codes: the DESIGN request-contract codes and the sidecar's own. Every
// rejection is an RFC 9457 problem whose "code" is one of these.
const (
	CodeGrantRequired       = "GRANT_REQUIRED"
	CodeGrantInvalid        = "GRANT_INVALID"
	CodeOwnerMismatch       = "OWNER_MISMATCH"
	CodeResourceMismatch    = "RESOURCE_MISMATCH"
	CodePolicyMismatch      = "POLICY_MISMATCH"
	CodeGrantNotHeld        = "GRANT_NOT_HELD"
	CodeEpochRevoked        = "EPOCH_REVOKED"
	CodeStatusStale         = "STATUS_STALE"
	CodeStaleOwner          = "STALE_OWNER"
	CodeSegmentGap          = "SEGMENT_GAP"
	CodeSegmentConflict     = "SEGMENT_CONFLICT"
	CodeFenceRegression     = "FENCE_REGRESSION"
	CodeMutationUnknown     = "MUTATION_UNKNOWN"
	CodeRegistryUnavailable = "REGISTRY_UNAVAILABLE"

	// CodeIdentityRequired: no caller workload identity could be established.
	CodeIdentityRequired = "IDENTITY_REQUIRED"
	// CodeFenceHeaderInvalid: a Fence-* header is duplicated or malformed.
	CodeFenceHeaderInvalid = "FENCE_HEADER_INVALID"
	// CodeInvalidResource: the route's path parameters do not make a valid resource ID.
	CodeInvalidResource = "INVALID_RESOURCE"
	// CodeBodyTooLarge: the request body exceeds the route's limit.
	CodeBodyTooLarge = "BODY_TOO_LARGE"
	// CodeBodyUnreadable: the request body could not be read (slow or cut client).
	CodeBodyUnreadable = "BODY_UNREADABLE"
	// CodeDigestMismatch: Content-Digest does not match the body.
	CodeDigestMismatch = "DIGEST_MISMATCH"
	// CodeRouteNotProtected: a mutation matched no route and unmatched mutations are rejected.
	CodeRouteNotProtected = "ROUTE_NOT_PROTECTED"
	// CodeResourceBusy: another mutation of the resource stayed in flight past the wait.
	CodeResourceBusy = "RESOURCE_BUSY"
	// CodeResourcePaused: an operator paused the resource.
	CodeResourcePaused = "RESOURCE_PAUSED"
	// CodeStoreUnavailable: the fenced store failed; nothing was forwarded.
	CodeStoreUnavailable = "STORE_UNAVAILABLE"
	// CodeBackendUnavailable: the backend refused the connection before
	// anything was sent; nothing was applied or recorded.
	CodeBackendUnavailable = "BACKEND_UNAVAILABLE"
)

// statusOf is the HTTP status of each code.
var statusOf = map[string]int{
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
	CodeIdentityRequired:    http.StatusUnauthorized,
	CodeFenceHeaderInvalid:  http.StatusBadRequest,
	CodeInvalidResource:     http.StatusBadRequest,
	CodeBodyTooLarge:        http.StatusRequestEntityTooLarge,
	CodeBodyUnreadable:      http.StatusBadRequest,
	CodeDigestMismatch:      http.StatusBadRequest,
	CodeRouteNotProtected:   http.StatusForbidden,
	CodeResourceBusy:        http.StatusServiceUnavailable,
	CodeResourcePaused:      http.StatusConflict,
	CodeStoreUnavailable:    http.StatusServiceUnavailable,
	CodeBackendUnavailable:  http.StatusBadGateway,
}

// rejection is a decision not to forward: a code, a detail, and where it applies a Retry-After.
type rejection struct {
	code   string
	detail string
	status int // 0: statusOf[code]
	extra  map[string]any
}

func reject(code, detail string) *rejection { return &rejection{code: code, detail: detail} }

func (r *rejection) with(k string, v any) *rejection {
	if r.extra == nil {
		r.extra = map[string]any{}
	}
	r.extra[k] = v
	return r
}

func (r *rejection) problem() *problem.Details {
	st := r.status
	if st == 0 {
		st = statusOf[r.code]
	}
	d := problem.New(st, r.code, r.detail)
	for k, v := range r.extra {
		d.With(k, v)
	}
	return d
}

// fromVerify maps a verify error to its rejection.
func fromVerify(err error) *rejection {
	var ve *verify.Error
	if errors.As(err, &ve) {
		return reject(string(ve.Code), err.Error())
	}
	return reject(CodeGrantInvalid, err.Error())
}
