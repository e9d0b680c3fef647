package campaign

import (
	"errors"

	"github.com/fencegate/fencegate"
)

var (
	// ErrBadConfig: a Config the runner cannot use (N < 1, Workers < 0).
	ErrBadConfig = errors.New("campaign: bad config")
	// ErrUnknownKind: a kind name that is not one of Kinds().
	ErrUnknownKind = errors.New("campaign: unknown kind")
	// ErrFixture: the keys or original tokens could not be built, or an
	// original tuple is not accepted by the checker (the campaign would
	// prove nothing).
	ErrFixture = errors.New("campaign: fixture")
)

// Rejection is a rejection the sidecar makes without package verify: a
// missing Fence-Grant (GRANT_REQUIRED) or a proof-mode request without a
// Fence-Status proof (STATUS_STALE).
type Rejection struct {
	Code   fencegate.Code
	Detail string
}

// Error returns "campaign: CODE: detail".
func (r *Rejection) Error() string { return "campaign: " + string(r.Code) + ": " + r.Detail }
