package verify

import (
	"fmt"

	"github.com/fencegate/fencegate"
)

// CheckBinding checks that the verified grant g is bound to the route's
// canonical resource and to the caller's workload identity owner, by exact
// string comparison (no normalisation; an empty resource or owner never
// matches). The resource is checked first: RESOURCE_MISMATCH, then
// OWNER_MISMATCH. The reason is the code sentinel itself. A nil g is
// GRANT_INVALID (ErrMalformed).
func CheckBinding(g *fencegate.Grant, resource, owner string) error {
	if g == nil {
		return invalid(ErrMalformed, "nil grant")
	}
	if resource == "" || g.Resource != resource {
		return newErr(fencegate.CodeResourceMismatch, ErrResourceMismatch, fmt.Sprintf("grant is for resource %q, route resource is %q", g.Resource, resource))
	}
	if owner == "" || g.Owner != owner {
		return newErr(fencegate.CodeOwnerMismatch, ErrOwnerMismatch, fmt.Sprintf("grant owner %q, caller %q", g.Owner, owner))
	}
	return nil
}

// CheckEpoch checks that the grant's issuer epoch is not revoked, i.e. not
// below minEpoch: EPOCH_REVOKED (reason ErrEpochRevoked) otherwise. A nil g
// is GRANT_INVALID (ErrMalformed). CheckStatus applies the same check.
func CheckEpoch(g *fencegate.Grant, minEpoch uint64) error {
	if g == nil {
		return invalid(ErrMalformed, "nil grant")
	}
	if e := checkEpoch(g, minEpoch); e != nil {
		return e
	}
	return nil
}

func checkEpoch(g *fencegate.Grant, minEpoch uint64) *Error {
	if g.IssuerEpoch < minEpoch {
		return newErr(fencegate.CodeEpochRevoked, ErrEpochRevoked, fmt.Sprintf("grant issuer epoch %d is below the minimum %d", g.IssuerEpoch, minEpoch))
	}
	return nil
}
