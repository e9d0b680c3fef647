package fencegate

// Lease states: the "state" claim of a lockStatus.v1 proof (Status.State)
// and the state of a lease on the registry API (Lease.State).
const (
	// StateHeld: the lease is held; the only state a write is admitted in.
	StateHeld = "HELD"
	// StateExpired: the lease's TTL ran out without a renewal.
	StateExpired = "EXPIRED"
	// StateReleased: the holder released the lease.
	StateReleased = "RELEASED"
	// StateRevoked: the lease was revoked: its issuer epoch is older than
	// the current one, or its policy generation is not the resource's.
	StateRevoked = "REVOKED"
)
