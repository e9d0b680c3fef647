package registry

import "errors"

// Sentinel errors. The HTTP API maps each to a stable problem code.
var (
	// ErrInvalidInput: a malformed resource, owner, request ID, TTL or other field.
	ErrInvalidInput = errors.New("registry: invalid input")
	// ErrLeaseHeld: the resource is held by another lease (a non-waiting
	// acquire, or a waiting one whose wait ran out).
	ErrLeaseHeld = errors.New("registry: resource is held")
	// ErrNotFound: no such lease, grant or request.
	ErrNotFound = errors.New("registry: not found")
	// ErrNotOwner: the caller is not the lease's owner.
	ErrNotOwner = errors.New("registry: caller is not the owner")
	// ErrNotHeld: renew of a lease that is expired, released or revoked.
	ErrNotHeld = errors.New("registry: lease is not held")
	// ErrRequestConflict: a request ID reused for another resource or TTL class.
	ErrRequestConflict = errors.New("registry: request ID already used for another acquire")
	// ErrPolicyDenied: the resource's policy refuses this owner, TTL or operation class.
	ErrPolicyDenied = errors.New("registry: denied by policy")
	// ErrFenceExhausted: the fence sequence cannot grow any further.
	ErrFenceExhausted = errors.New("registry: fence sequence exhausted")
	// ErrBackend: the backend failed; the outcome of a write is unknown to the caller.
	ErrBackend = errors.New("registry: backend failure")
	// ErrClosed: the backend or registry is closed.
	ErrClosed = errors.New("registry: closed")
)
