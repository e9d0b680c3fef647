package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/registry"
)

// toProblem maps a registry error to problem details and a Retry-After (a
// busy resource's is its holder's time left, on the registry's clock).
func toProblem(err error) (*fencegate.Problem, time.Duration) {
	var busy *registry.BusyError
	var lost *registry.StoreLostError
	var unpresented *registry.NotPresentedError
	switch {
	case errors.As(err, &busy):
		retry := max(busy.HolderExpiresAt.Sub(busy.At), time.Second)
		return fencegate.NewProblem(fencegate.CodeLeaseHeld, err.Error()).
			With("resource", busy.Resource).
			With("holderExpiresAt", busy.HolderExpiresAt.UTC().Format(time.RFC3339Nano)), retry
	case errors.As(err, &lost):
		return fencegate.NewProblem(fencegate.CodeStoreLost, err.Error()).
			With("store", lost.Store).With("anchored", lost.Anchored).With("presented", lost.Presented), 0
	case errors.As(err, &unpresented):
		return fencegate.NewProblem(fencegate.CodeConflict, err.Error()).
			With("store", unpresented.Store).With("generation", unpresented.Generation).
			With("anchored", unpresented.Anchored).With("presented", unpresented.Presented), 0
	case errors.Is(err, registry.ErrInvalidInput):
		return fencegate.NewProblem(fencegate.CodeInvalidRequest, err.Error()), 0
	case errors.Is(err, identity.ErrNoIdentity), errors.Is(err, identity.ErrUntrusted):
		return fencegate.NewProblem(fencegate.CodeIdentityRequired, err.Error()), 0
	case errors.Is(err, registry.ErrNotOwner):
		return fencegate.NewProblem(fencegate.CodeNotOwner, err.Error()), 0
	case errors.Is(err, registry.ErrPolicyDenied):
		return fencegate.NewProblem(fencegate.CodePolicyDenied, err.Error()), 0
	case errors.Is(err, registry.ErrNotHeld):
		return fencegate.NewProblem(fencegate.CodeLeaseNotHeld, err.Error()), 0
	case errors.Is(err, registry.ErrRequestConflict):
		return fencegate.NewProblem(fencegate.CodeRequestConflict, err.Error()), 0
	case errors.Is(err, registry.ErrNotFound):
		return fencegate.NewProblem(fencegate.CodeNotFound, err.Error()), 0
	case errors.Is(err, registry.ErrFenceExhausted):
		return fencegate.NewProblem(fencegate.CodeFenceExhausted, err.Error()), 0
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return backendUnavailable("request cancelled or timed out"), time.Second
	default:
		return backendUnavailable("registry backend failure"), time.Second
	}
}

// backendUnavailable is the registry's BACKEND_UNAVAILABLE: 503, its own
// coordination backend failed (the sidecar answers the code with 502).
func backendUnavailable(detail string) *fencegate.Problem {
	return fencegate.NewProblem(fencegate.CodeBackendUnavailable, detail).WithStatus(http.StatusServiceUnavailable)
}
