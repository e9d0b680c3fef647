package registry

import (
	"errors"
	"fmt"
)

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
	// ErrStoreLost: a fenced store presented a generation that is not the
	// one anchored: it lost its data or is another data set. A
	// *StoreLostError says which generations.
	ErrStoreLost = errors.New("registry: fenced store lost (its generation is not the anchored one)")
	// ErrNotPresented: an acknowledgement of a store loss names a
	// generation that is neither the anchored one nor the one the store's
	// sidecars presented. A *NotPresentedError says which generations.
	ErrNotPresented = errors.New("registry: generation not presented by the store")
)

// StoreLostError is returned (wrapping ErrStoreLost) when a registration or
// an anchor request of Store presents generation Presented where Anchored
// is anchored. Every anchor step of the store is refused until an operator
// acknowledges the loss (Registry.AcknowledgeLoss).
type StoreLostError struct {
	Store     string
	Anchored  string
	Presented string
}

func (e *StoreLostError) Error() string {
	return fmt.Sprintf("registry: fenced store %s presented generation %q, the anchored one is %q: it lost its data or is another data set; acknowledge the loss to adopt the new generation", e.Store, e.Presented, e.Anchored)
}

// Unwrap makes errors.Is(err, ErrStoreLost) true.
func (e *StoreLostError) Unwrap() error { return ErrStoreLost }

// NotPresentedError is returned (wrapping ErrNotPresented) when an
// acknowledgement of Store's loss names Generation, which no registration
// of the store presented: Anchored is anchored, Presented the latest other
// generation a registration presented (empty: none, the store has not
// reported a loss). Nothing is changed: adopting a generation the store
// does not present would refuse every anchor step of every sidecar of it
// until the real one is acknowledged.
type NotPresentedError struct {
	Store      string
	Generation string
	Anchored   string
	Presented  string
}

func (e *NotPresentedError) Error() string {
	if e.Presented == "" {
		return fmt.Sprintf("registry: fenced store %s has not presented generation %q: no loss of it is reported (the anchored generation is %q, no other presented); nothing was changed", e.Store, e.Generation, e.Anchored)
	}
	return fmt.Sprintf("registry: fenced store %s has not presented generation %q: the loss reported presents %q (the anchored generation is %q); nothing was changed", e.Store, e.Generation, e.Presented, e.Anchored)
}

// Unwrap makes errors.Is(err, ErrNotPresented) true.
func (e *NotPresentedError) Unwrap() error { return ErrNotPresented }
