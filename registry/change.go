package registry

import (
	"time"

	"github.com/fencegate/fencegate"
)

// Change is what one decision writes, in one atomic step with the read of
// its snapshot. A nil or empty field is left as stored; an empty Change
// writes nothing (a backend may then roll its transaction back).
type Change struct {
	// Meta replaces the registry-wide state.
	Meta *Meta
	// Resource replaces the record of Resource.Resource.
	Resource *ResourceRecord
	// Leases replace stored leases by lease ID (an observed end, a renewed
	// expiry). Their index entries do not change.
	Leases []LeaseRecord
	// Grant is a new lease, written with its two index entries:
	// (Owner, RequestID) -> Lease and Digest -> Lease. DecideAcquire leaves
	// its Token and Digest empty; SealGrant sets them, and a backend must
	// refuse to write an unsealed grant.
	Grant *LeaseRecord
	// Policy replaces the policy of Policy.Pattern.
	Policy *fencegate.Policy
	// Delete lists leases to delete, each with its two index entries.
	Delete []LeaseRecord
	// Store replaces a fenced store's record (anchor.go).
	Store *StoreRecord
	// Anchors replace the anchored progress of (store, resource), in order.
	Anchors []AnchorRecord
	// Ledger replaces a fenced store's enforcement ledger.
	Ledger *LedgerRecord
}

// Empty reports whether c writes nothing.
func (c Change) Empty() bool {
	return c.Meta == nil && c.Resource == nil && len(c.Leases) == 0 && c.Grant == nil && c.Policy == nil && len(c.Delete) == 0 &&
		c.Store == nil && len(c.Anchors) == 0 && c.Ledger == nil
}

// AcquireSnapshot is what DecideAcquire reads. A backend loads it by keys
// derived from the AcquireInput: the meta, the policies (to match
// in.Resource), the request index entry (in.Owner, in.RequestID) and the
// lease it names, the record of in.Resource and the lease its Holder names.
type AcquireSnapshot struct {
	// Meta is the registry-wide state as stored (zero when never written).
	Meta Meta
	// Policy is the policy matching the resource (MatchPolicy), or zero.
	Policy fencegate.Policy
	// RequestIndex is the lease ID the (owner, requestId) index names, ""
	// when none; Requested is that lease, nil when it is missing.
	RequestIndex string
	Requested    *LeaseRecord
	// Resource is the resource's record, zero when none is stored.
	Resource ResourceRecord
	// Holder is the lease Resource.Holder names, nil when none is stored
	// (never granted, or compacted).
	Holder *LeaseRecord
}

// LeaseSnapshot is what DecideRenew, DecideRelease and DecideStatus read:
// one lease, the record of its resource and the policy matching it. A
// backend loads the lease by ID (a status read resolves a grant digest or
// a request ID through its index first), then the other two by the
// lease's resource.
type LeaseSnapshot struct {
	// Meta is the registry-wide state as stored.
	Meta Meta
	// Lease is the lease, nil when none is stored.
	Lease *LeaseRecord
	// Resource is the record of the lease's resource, nil when none is
	// stored.
	Resource *ResourceRecord
	// Policy is the policy matching the lease's resource, or zero.
	Policy fencegate.Policy
}

// ResourceSnapshot is what DecideResource reads: the record of a resource,
// the lease its Holder names, and the policy matching it.
type ResourceSnapshot struct {
	Meta     Meta
	Resource ResourceRecord
	Holder   *LeaseRecord
	Policy   fencegate.Policy
}

// FenceFloorInput raises a floor: the global one when Resource is "".
type FenceFloorInput struct {
	Resource string
	Floor    uint64
}

// FenceFloorSnapshot is what DecideFenceFloor reads: the meta and, for a
// resource's floor, its record (zero when none is stored).
type FenceFloorSnapshot struct {
	Meta     Meta
	Resource ResourceRecord
}

// PolicySnapshot is what DecideDeletePolicy reads: the meta and the policy
// stored under the pattern, nil when none.
type PolicySnapshot struct {
	Meta     Meta
	Existing *fencegate.Policy
}

// CompactInput asks to delete up to Limit leases that ended before
// EndedBefore.
type CompactInput struct {
	EndedBefore time.Time
	Limit       int
}

// CompactSnapshot is what DecideCompact reads: candidate leases, which a
// backend collects with Compactable (at most Limit of them; scanning stops
// there). The decision checks each again.
type CompactSnapshot struct {
	Leases []LeaseRecord
}
