package registrytest

import (
	"cmp"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/registry"
)

func itoa(n int) string { return strconv.Itoa(n) }

func sortPolicies(ps []fencegate.Policy) []fencegate.Policy {
	out := slices.Clone(ps)
	slices.SortFunc(out, func(a, b fencegate.Policy) int { return cmp.Compare(a.Pattern, b.Pattern) })
	if len(out) == 0 {
		return nil
	}
	return out
}

// ms is a time in Unix milliseconds, as the registry stores it.
func ms(t time.Time) int64 { return t.UnixMilli() }

// req builds an acquire request.
func req(resource, owner, requestID string, ttl time.Duration) registry.AcquireRequest {
	return registry.AcquireRequest{Resource: resource, Owner: owner, RequestID: requestID, TTL: ttl}
}

// wantErr fails t unless errors.Is(err, target).
func wantErr(t testing.TB, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: error %v, want %v", what, err, target)
	}
}

// wantBusy fails t unless err is a *registry.BusyError for resource that
// wraps registry.ErrLeaseHeld, and returns it.
func wantBusy(t testing.TB, what string, err error, resource string) *registry.BusyError {
	t.Helper()
	var be *registry.BusyError
	if !errors.As(err, &be) || !errors.Is(err, registry.ErrLeaseHeld) {
		t.Fatalf("%s: error %v, want *registry.BusyError wrapping ErrLeaseHeld", what, err)
	}
	if be.Resource != resource {
		t.Errorf("%s: BusyError for %q, want %q", what, be.Resource, resource)
	}
	return be
}
