package memory

import (
	"context"
	"slices"
	"strings"

	"github.com/fencegate/fencegate/store"
)

// Enforcements implements store.Store.
func (s *Store) Enforcements(ctx context.Context) ([]store.Enforcement, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := make([]store.Enforcement, 0, len(s.ledger))
	for _, e := range s.ledger {
		out = append(out, e.Clone())
	}
	slices.SortFunc(out, func(a, b store.Enforcement) int { return strings.Compare(a.Shape, b.Shape) })
	return out, nil
}

// RecordEnforcement implements store.Store.
func (s *Store) RecordEnforcement(ctx context.Context, in store.EnforcementInput) (store.Enforcement, error) {
	if err := in.Validate(); err != nil {
		return store.Enforcement{}, err
	}
	if err := s.lock(ctx); err != nil {
		return store.Enforcement{}, err
	}
	defer s.mu.Unlock()
	var cur *store.Enforcement
	if e, ok := s.ledger[in.Shape]; ok {
		cur = &e
	}
	next, ch, err := store.DecideEnforcement(cur, in)
	changed := ch.Writes()
	if err != nil {
		return store.Enforcement{}, err
	}
	if changed {
		if s.ledger == nil {
			s.ledger = map[string]store.Enforcement{}
		}
		s.ledger[in.Shape] = next // fresh: DecideEnforcement shares nothing with cur
	}
	return next.Clone(), nil
}
