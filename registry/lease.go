package registry

import (
	"strconv"
	"time"

	"github.com/fencegate/fencegate"
)

// OperationRoot is the grant's operation root: a digest binding the
// resource, the fence and the grant ID. Every segment of the grant's
// long task shares it.
func OperationRoot(resource string, fence uint64, grantID string) string {
	return fencegate.Digest([]byte(resource + "\n" + strconv.FormatUint(fence, 10) + "\n" + grantID))
}

// LeaseState is the effective state of a lease at now: the stored state
// unless that is HELD, then REVOKED when its issuer epoch is older than the
// current one or its policy generation is not the resource's current one,
// EXPIRED once now reaches its expiry, else HELD.
func LeaseState(l LeaseRecord, m Meta, policyGen uint64, now time.Time) string {
	switch {
	case l.State != fencegate.StateHeld:
		return l.State
	case l.IssuerEpoch < m.IssuerEpoch, l.PolicyGeneration != policyGen:
		return fencegate.StateRevoked
	case ms(now) >= l.ExpiresAt:
		return fencegate.StateExpired
	default:
		return fencegate.StateHeld
	}
}

// view is l with its effective state at now, the step's decision time.
func view(l LeaseRecord, m Meta, policyGen uint64, now time.Time) LeaseView {
	return LeaseView{Lease: l, State: LeaseState(l, m, policyGen, now), Meta: m, PolicyGeneration: policyGen, At: now}
}

// endedAt is when a lease that is no longer HELD (effective state st at
// now) ended: its expiry when it expired, else now.
func endedAt(l LeaseRecord, st string, now time.Time) int64 {
	if st == fencegate.StateExpired {
		return l.ExpiresAt
	}
	return ms(now)
}
