package registry

import (
	"fmt"
	"time"

	"github.com/fencegate/fencegate"
)

// RevokeInput revokes one lease at Now (an operator's act: no owner).
type RevokeInput struct {
	Lease string
	Now   time.Time
	// MaxSkew is the process's clock skew budget: the step decides at
	// DecisionTime(Now, the meta read, MaxSkew). 0 decides at Now.
	MaxSkew time.Duration
}

// RevokeResult is RevokeLease's answer.
type RevokeResult struct {
	// View is the lease after the revocation, or as it stands when it was
	// no longer held.
	View LeaseView
	// Revoked: this call ended a HELD lease. Revoking a lease that had
	// already ended (released, expired, revoked) changes nothing and
	// leaves it false: a revocation is idempotent.
	Revoked bool
}

// DecideRevoke is RevokeLease's decision, a pure function over snap (see
// LeaseSnapshot; loaded with the resource's record), at
// DecisionTime(in.Now, snap.Meta, in.MaxSkew). A HELD lease is stored
// REVOKED, ended then, and frees its resource: from then on
// every status read of its grants answers REVOKED (a sidecar refuses
// them), its renewals are refused (NotHeld), and the next acquire of the
// resource gets the next fence (LastFence is never touched, so never
// lowered). A lease that is no longer held keeps its state (its observed
// end is recorded if not yet written), as DecideRelease does.
func DecideRevoke(snap LeaseSnapshot, in RevokeInput) (RevokeResult, Change, error) {
	l := snap.Lease
	switch {
	case l == nil:
		return RevokeResult{}, Change{}, fmt.Errorf("%w: lease %q", ErrNotFound, in.Lease)
	case l.Lease != in.Lease:
		return RevokeResult{}, Change{}, fmt.Errorf("%w: lease %q read as %q", ErrBackend, in.Lease, l.Lease)
	case snap.Resource != nil && snap.Resource.Resource != l.Resource:
		return RevokeResult{}, Change{}, fmt.Errorf("%w: record of %q read for lease %s of %q", ErrBackend, snap.Resource.Resource, in.Lease, l.Resource)
	}
	rec := *l
	m, gen := snap.Meta.current(), snap.Policy.Generation
	at := DecisionTime(in.Now, m, in.MaxSkew)
	ch, revoked := endLease(&rec, snap.Resource, &m, gen, fencegate.StateRevoked, at)
	res := RevokeResult{View: view(rec, m, gen, at), Revoked: revoked}
	stampTime(&ch, m, at)
	return res, ch, nil
}
