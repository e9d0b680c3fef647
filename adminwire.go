package fencegate

import "time"

// The wire types of the registry's operator routes under /v1/admin that
// wire.go does not hold.

// LeasePage is the answer of GET /v1/admin/leases: one page of the stored
// leases in (resource, fence) order.
type LeasePage struct {
	Leases []ListedLease `json:"leases"`
	// Next is the cursor of the next page (the after parameter), "" when
	// this page is the last. It is opaque.
	Next string `json:"next,omitempty"`
}

// ListedLease is a lease in a listing: the Lease members without the
// grant or a status proof (status is "", statusExpiresAt the zero time),
// and when the lease ended.
type ListedLease struct {
	Lease
	// EndedAt is when the registry recorded its end (release, observed
	// expiry, revocation); absent while the stored state is HELD (a lease
	// past its expiry whose end is not written yet lists as EXPIRED
	// without it).
	EndedAt time.Time `json:"endedAt,omitzero"`
}

// RevokeBody is the optional body of POST /v1/admin/leases/{lease}/revoke.
type RevokeBody struct {
	// Reason is logged with the revocation (up to 1024 bytes).
	Reason string `json:"reason,omitempty"`
}

// RevokeAnswer is the answer of POST /v1/admin/leases/{lease}/revoke.
type RevokeAnswer struct {
	// Revoked: this call ended a HELD lease; false when the lease had
	// already ended (released, expired or revoked) and nothing changed.
	Revoked bool `json:"revoked"`
	// Lease is the lease as it stands (state REVOKED, or how it ended),
	// with a status proof of that state and without its grant.
	Lease Lease `json:"lease"`
}

// FenceFloorAnswer is the answer of POST /v1/admin/fence-floor.
type FenceFloorAnswer struct {
	Meta Meta `json:"meta"`
	// Resource is the resource's record after the raise; all zero for the
	// global floor.
	Resource FenceFloorResource `json:"resource"`
}

// FenceFloorResource is a resource's fence record in a FenceFloorAnswer.
type FenceFloorResource struct {
	Resource   string `json:"resource"`
	LastFence  uint64 `json:"lastFence"`
	FenceFloor uint64 `json:"fenceFloor"`
	// Holder is the lease ID of the resource's last lease.
	Holder string `json:"holder,omitempty"`
	// FreedAt is when its last lease ended, Unix ms (0 while held).
	FreedAt int64 `json:"freedAt,omitempty"`
}
