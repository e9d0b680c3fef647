package bolt

import (
	"context"

	"github.com/fencegate/fencegate/store"
)

// Begin implements store.Store.
func (s *Store) Begin(ctx context.Context, in store.BeginInput) (store.BeginResult, error) {
	if err := in.Validate(); err != nil {
		return store.BeginResult{}, err
	}
	key := store.ReceiptKey{Resource: in.Resource, Fence: in.Fence, Seq: in.Seq}
	var res store.BeginResult
	_, q, err := s.transition(ctx, in.Resource, &key, func(rec store.Record, rc *store.Receipt) (store.Change, error) {
		r, ch, err := store.Decide(rec, rc, in)
		res = r
		return ch, err
	})
	if err != nil {
		return store.BeginResult{}, err
	}
	if q != nil {
		res.Quarantine = q
	}
	return res, nil
}

// Commit implements store.Store.
func (s *Store) Commit(ctx context.Context, in store.CommitInput) (store.Receipt, error) {
	if err := in.Validate(); err != nil {
		return store.Receipt{}, err
	}
	key := store.ReceiptKey{Resource: in.Resource, Fence: in.Fence, Seq: in.Seq}
	ch, _, err := s.transition(ctx, in.Resource, &key, func(rec store.Record, rc *store.Receipt) (store.Change, error) {
		return store.DecideCommit(rec, rc, in, s.bodyLimit)
	})
	if err != nil {
		return store.Receipt{}, err
	}
	return *ch.Receipt, nil
}

// MarkUnknown implements store.Store.
func (s *Store) MarkUnknown(ctx context.Context, in store.MarkUnknownInput) (store.Mutation, error) {
	if err := in.Validate(); err != nil {
		return store.Mutation{}, err
	}
	ch, _, err := s.transition(ctx, in.Resource, nil, func(rec store.Record, _ *store.Receipt) (store.Change, error) {
		return store.DecideMarkUnknown(rec, in)
	})
	if err != nil {
		return store.Mutation{}, err
	}
	return *ch.Record.InFlight, nil
}

// Resolve implements store.Store.
func (s *Store) Resolve(ctx context.Context, in store.ResolveInput) (store.ResolveResult, error) {
	if err := in.Validate(); err != nil {
		return store.ResolveResult{}, err
	}
	key := store.ReceiptKey{Resource: in.Resource, Fence: in.Fence, Seq: in.Seq}
	var rec store.Record
	ch, _, err := s.transition(ctx, in.Resource, &key, func(r store.Record, rc *store.Receipt) (store.Change, error) {
		rec = r
		return store.DecideResolve(r, rc, in, s.bodyLimit)
	})
	if err != nil {
		return store.ResolveResult{}, err
	}
	if ch.WriteRecord {
		rec = ch.Record
	}
	return store.ResolveResult{Applied: in.Applied, Receipt: ch.Receipt, Record: rec}, nil
}

// Abort implements store.Store.
func (s *Store) Abort(ctx context.Context, in store.AbortInput) (store.Record, error) {
	if err := in.Validate(); err != nil {
		return store.Record{}, err
	}
	return s.recordTransition(ctx, in.Resource, func(rec store.Record) (store.Change, error) { return store.DecideAbort(rec, in) })
}

// Pause implements store.Store.
func (s *Store) Pause(ctx context.Context, in store.PauseInput) (store.Record, error) {
	if err := in.Validate(); err != nil {
		return store.Record{}, err
	}
	return s.recordTransition(ctx, in.Resource, func(rec store.Record) (store.Change, error) { return store.DecidePause(rec, in) })
}

// Resume implements store.Store.
func (s *Store) Resume(ctx context.Context, resource string) (store.Record, error) {
	if err := store.ValidateResource(resource); err != nil {
		return store.Record{}, err
	}
	return s.recordTransition(ctx, resource, func(rec store.Record) (store.Change, error) { return store.DecideResume(rec, resource) })
}

// Repair implements store.Store.
func (s *Store) Repair(ctx context.Context, in store.RepairInput) (store.Record, error) {
	if err := in.Validate(); err != nil {
		return store.Record{}, err
	}
	return s.recordTransition(ctx, in.Resource, func(rec store.Record) (store.Change, error) { return store.DecideRepair(rec, in) })
}

func (s *Store) recordTransition(ctx context.Context, resource string, f func(store.Record) (store.Change, error)) (store.Record, error) {
	ch, _, err := s.transition(ctx, resource, nil, func(rec store.Record, _ *store.Receipt) (store.Change, error) { return f(rec) })
	if err != nil {
		return store.Record{}, err
	}
	return ch.Record, nil
}
