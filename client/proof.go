package client

import (
	"context"
	"time"
)

// StatusProof returns a Fence-Status proof of the Holder's lease for a
// sidecar route in proof mode whose status.maxAge is maxAge (0:
// DefaultProofMaxAge), for a caller that sends its writes itself (another
// process, another HTTP stack) rather than through the Holder's
// Transport. The proof is at most half of maxAge old when returned: the
// last renewal's while it is, else a new one read from the registry
// (Client.Status), so the caller has at least the other half to use it.
// It fails with a *StateError (ErrNotHolding) when the Holder does not
// know that it holds the lease, or when the registry cannot be read.
func (h *Holder) StatusProof(ctx context.Context, maxAge time.Duration) (string, error) {
	if maxAge <= 0 {
		maxAge = DefaultProofMaxAge
	}
	if err := h.Usable(); err != nil {
		return "", err
	}
	return h.proofFor(ctx, maxAge/2)
}
