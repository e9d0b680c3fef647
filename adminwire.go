package fencegate

// The wire types of the registry's operator routes under /v1/admin that
// wire.go does not hold.

// LeasePage is the answer of GET /v1/admin/leases: one page of the stored
// leases in (resource, fence) order. Leases carry neither their grant nor
// a status proof (Status is "", StatusExpiresAt the zero time).
type LeasePage struct {
	Leases []Lease `json:"leases"`
	// Next is the cursor of the next page (the after parameter), "" when
	// this page is the last. It is opaque.
	Next string `json:"next,omitempty"`
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
