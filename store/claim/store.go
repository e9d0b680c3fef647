package claim

import (
	"context"

	"github.com/fencegate/fencegate/store"
)

// Store is a local store that refuses to begin a mutation while its
// sidecar does not hold the claim on its service: fail closed, the
// pipeline answers STORE_UNAVAILABLE and forwards nothing. Every other
// call goes to the store as it is. Closing it closes the store only (the
// claim is released by its owner, after).
type Store struct {
	store.Store
	claim *Claim
}

// Guard wraps st so that Begin needs c held.
func Guard(st store.Store, c *Claim) *Store { return &Store{Store: st, claim: c} }

// Begin refuses while the claim is not held, else begins on the store.
func (s *Store) Begin(ctx context.Context, in store.BeginInput) (store.BeginResult, error) {
	if err := s.claim.Held(); err != nil {
		return store.BeginResult{}, err
	}
	return s.Store.Begin(ctx, in)
}

// Claim is the claim the store is guarded by.
func (s *Store) Claim() *Claim { return s.claim }

// Unwrap returns the local store.
func (s *Store) Unwrap() store.Store { return s.Store }
