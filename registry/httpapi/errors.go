package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/fencegate/fencegate/internal/identity"
	"github.com/fencegate/fencegate/internal/problem"
	"github.com/fencegate/fencegate/registry"
)

// Problem codes of the registry API.
const (
	CodeInvalidRequest     = "INVALID_REQUEST"
	CodeIdentityRequired   = "IDENTITY_REQUIRED"
	CodeNotOwner           = "NOT_OWNER"
	CodePolicyDenied       = "POLICY_DENIED"
	CodeLeaseHeld          = "LEASE_HELD"
	CodeLeaseNotHeld       = "LEASE_NOT_HELD"
	CodeRequestConflict    = "REQUEST_CONFLICT"
	CodeNotFound           = "NOT_FOUND"
	CodeMethodNotAllowed   = "METHOD_NOT_ALLOWED"
	CodeBodyTooLarge       = "BODY_TOO_LARGE"
	CodeUnsupportedMedia   = "UNSUPPORTED_MEDIA_TYPE"
	CodeAdminRequired      = "ADMIN_REQUIRED"
	CodeFenceExhausted     = "FENCE_EXHAUSTED"
	CodeBackendUnavailable = "BACKEND_UNAVAILABLE"
	CodeInternal           = "INTERNAL"
)

// toProblem maps a registry error to problem details.
func toProblem(err error) (*problem.Details, time.Duration) {
	var busy *registry.BusyError
	switch {
	case errors.As(err, &busy):
		retry := max(time.Until(busy.HolderExpiresAt), time.Second)
		return problem.New(http.StatusConflict, CodeLeaseHeld, err.Error()).
			With("resource", busy.Resource).
			With("holderExpiresAt", busy.HolderExpiresAt.UTC().Format(time.RFC3339Nano)), retry
	case errors.Is(err, registry.ErrInvalidInput):
		return problem.New(http.StatusBadRequest, CodeInvalidRequest, err.Error()), 0
	case errors.Is(err, identity.ErrNoIdentity), errors.Is(err, identity.ErrUntrusted):
		return problem.New(http.StatusUnauthorized, CodeIdentityRequired, err.Error()), 0
	case errors.Is(err, registry.ErrNotOwner):
		return problem.New(http.StatusForbidden, CodeNotOwner, err.Error()), 0
	case errors.Is(err, registry.ErrPolicyDenied):
		return problem.New(http.StatusForbidden, CodePolicyDenied, err.Error()), 0
	case errors.Is(err, registry.ErrNotHeld):
		return problem.New(http.StatusConflict, CodeLeaseNotHeld, err.Error()), 0
	case errors.Is(err, registry.ErrRequestConflict):
		return problem.New(http.StatusConflict, CodeRequestConflict, err.Error()), 0
	case errors.Is(err, registry.ErrNotFound):
		return problem.New(http.StatusNotFound, CodeNotFound, err.Error()), 0
	case errors.Is(err, registry.ErrFenceExhausted):
		return problem.New(http.StatusServiceUnavailable, CodeFenceExhausted, err.Error()), 0
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return problem.New(http.StatusServiceUnavailable, CodeBackendUnavailable, "request cancelled or timed out"), time.Second
	default:
		return problem.New(http.StatusServiceUnavailable, CodeBackendUnavailable, "registry backend failure"), time.Second
	}
}
