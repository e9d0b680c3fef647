package memory

import (
	"context"
	"slices"

	"github.com/fencegate/fencegate/store"
)

// Generation implements store.Store: the ID chosen at New.
func (s *Store) Generation(ctx context.Context) (string, error) {
	if err := s.lock(ctx); err != nil {
		return "", err
	}
	defer s.mu.Unlock()
	return s.generation, nil
}

// TrustedKeys implements store.Store.
func (s *Store) TrustedKeys(ctx context.Context) ([]store.TrustedKey, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	return slices.Clone(s.pins), nil
}

// RecordTrust implements store.Store.
func (s *Store) RecordTrust(ctx context.Context, in store.TrustInput) ([]store.TrustedKey, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	next, ch, err := store.DecideTrust(s.pins, in)
	changed := ch.Writes()
	if err != nil {
		return nil, err
	}
	if changed {
		s.pins = next // fresh: DecideTrust shares nothing with its input
	}
	return slices.Clone(next), nil
}
