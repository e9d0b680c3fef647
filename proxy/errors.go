package proxy

import (
	"errors"
	"net/http"

	"github.com/fencegate/fencegate/internal/problem"
	"github.com/fencegate/fencegate/registry/client"
	"github.com/fencegate/fencegate/verify"
)

// Codes: the DESIGN request-contract codes and the sidecar's own (see the
// README's table). Every rejection is an RFC 9457 problem whose "code" is
// one of these. The worker SDK (registry/client) owns their spelling, with
// one sentinel error per code; the sidecar re-exports them.
const (
	CodeGrantRequired       = client.CodeGrantRequired
	CodeGrantInvalid        = client.CodeGrantInvalid
	CodeOwnerMismatch       = client.CodeOwnerMismatch
	CodeResourceMismatch    = client.CodeResourceMismatch
	CodePolicyMismatch      = client.CodePolicyMismatch
	CodeGrantNotHeld        = client.CodeGrantNotHeld
	CodeEpochRevoked        = client.CodeEpochRevoked
	CodeStatusStale         = client.CodeStatusStale
	CodeStaleOwner          = client.CodeStaleOwner
	CodeSegmentGap          = client.CodeSegmentGap
	CodeSegmentConflict     = client.CodeSegmentConflict
	CodeFenceRegression     = client.CodeFenceRegression
	CodeMutationUnknown     = client.CodeMutationUnknown
	CodeRegistryUnavailable = client.CodeRegistryUnavailable
	CodeIdentityRequired    = client.CodeIdentityRequired
	CodeFenceHeaderInvalid  = client.CodeFenceHeaderInvalid
	CodeInvalidResource     = client.CodeInvalidResource
	CodeBodyTooLarge        = client.CodeBodyTooLarge
	CodeBodyUnreadable      = client.CodeBodyUnreadable
	CodeDigestMismatch      = client.CodeDigestMismatch
	CodeRouteNotProtected   = client.CodeRouteNotProtected
	CodeResourceBusy        = client.CodeResourceBusy
	CodeResourcePaused      = client.CodeResourcePaused
	CodeStoreUnavailable    = client.CodeStoreUnavailable
	CodeBackendUnavailable  = client.CodeBackendUnavailable

	// Refusals before any route is looked at (readpath.go).
	CodeMethodOverrideRefused = client.CodeMethodOverrideRefused
	CodeUpgradeRefused        = client.CodeUpgradeRefused

	// A replay of an accepted segment whose stored answer is incomplete (respond.go).
	CodeReplayIncomplete = client.CodeReplayIncomplete
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

	CodeMethodOverrideRefused: http.StatusBadRequest,
	CodeUpgradeRefused:        http.StatusBadRequest,

	// 409, not 2xx: the body is not the backend's answer. Not 502 either:
	// nothing failed now and the outcome is known (accepted), and a 5xx
	// reads as "maybe not applied, retry" to generic clients and retry
	// layers; a retry only replays this answer. 409 says what it is: the
	// resource's state (this segment is accepted, its answer not kept
	// whole) decides the answer, as for the other segment-state codes.
	CodeReplayIncomplete: http.StatusConflict,
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
