package memory

import (
	"context"

	"github.com/fencegate/fencegate/store"
)

// Begin implements store.Store.
func (s *Store) Begin(ctx context.Context, in store.BeginInput) (store.BeginResult, error) {
	if err := in.Validate(); err != nil {
		return store.BeginResult{}, err
	}
	if err := s.lock(ctx); err != nil {
		return store.BeginResult{}, err
	}
	defer s.mu.Unlock()
	res, ch, err := store.Decide(s.peek(in.Resource), s.receipts[store.ReceiptKey{Resource: in.Resource, Fence: in.Fence, Seq: in.Seq}], in)
	if err != nil {
		return store.BeginResult{}, err
	}
	if q := s.apply(ch); q != nil {
		res.Quarantine = q
	}
	return res, nil
}

// Commit implements store.Store.
func (s *Store) Commit(ctx context.Context, in store.CommitInput) (store.Receipt, error) {
	if err := in.Validate(); err != nil {
		return store.Receipt{}, err
	}
	if err := s.lock(ctx); err != nil {
		return store.Receipt{}, err
	}
	defer s.mu.Unlock()
	ch, err := store.DecideCommit(s.peek(in.Resource), s.receipts[store.ReceiptKey{Resource: in.Resource, Fence: in.Fence, Seq: in.Seq}], in, s.bodyLimit)
	if err != nil {
		return store.Receipt{}, err
	}
	s.apply(ch)
	return ch.Receipt.Clone(), nil
}

// MarkUnknown implements store.Store.
func (s *Store) MarkUnknown(ctx context.Context, in store.MarkUnknownInput) (store.Mutation, error) {
	if err := in.Validate(); err != nil {
		return store.Mutation{}, err
	}
	if err := s.lock(ctx); err != nil {
		return store.Mutation{}, err
	}
	defer s.mu.Unlock()
	ch, err := store.DecideMarkUnknown(s.peek(in.Resource), in)
	if err != nil {
		return store.Mutation{}, err
	}
	s.apply(ch)
	return *ch.Record.InFlight, nil
}

// Resolve implements store.Store.
func (s *Store) Resolve(ctx context.Context, in store.ResolveInput) (store.ResolveResult, error) {
	if err := in.Validate(); err != nil {
		return store.ResolveResult{}, err
	}
	if err := s.lock(ctx); err != nil {
		return store.ResolveResult{}, err
	}
	defer s.mu.Unlock()
	ch, err := store.DecideResolve(s.peek(in.Resource), s.receipts[store.ReceiptKey{Resource: in.Resource, Fence: in.Fence, Seq: in.Seq}], in, s.bodyLimit)
	if err != nil {
		return store.ResolveResult{}, err
	}
	s.apply(ch)
	res := store.ResolveResult{Applied: in.Applied, Record: s.record(in.Resource)}
	if ch.Receipt != nil {
		r := ch.Receipt.Clone()
		res.Receipt = &r
	}
	return res, nil
}

// Abort implements store.Store.
func (s *Store) Abort(ctx context.Context, in store.AbortInput) (store.Record, error) {
	if err := in.Validate(); err != nil {
		return store.Record{}, err
	}
	return s.transition(ctx, in.Resource, func(rec store.Record) (store.Change, error) { return store.DecideAbort(rec, in) })
}

// Pause implements store.Store.
func (s *Store) Pause(ctx context.Context, in store.PauseInput) (store.Record, error) {
	if err := in.Validate(); err != nil {
		return store.Record{}, err
	}
	return s.transition(ctx, in.Resource, func(rec store.Record) (store.Change, error) { return store.DecidePause(rec, in) })
}

// Resume implements store.Store.
func (s *Store) Resume(ctx context.Context, resource string) (store.Record, error) {
	if err := store.ValidateResource(resource); err != nil {
		return store.Record{}, err
	}
	return s.transition(ctx, resource, func(rec store.Record) (store.Change, error) { return store.DecideResume(rec, resource) })
}

// Repair implements store.Store.
func (s *Store) Repair(ctx context.Context, in store.RepairInput) (store.Record, error) {
	if err := in.Validate(); err != nil {
		return store.Record{}, err
	}
	return s.transition(ctx, in.Resource, func(rec store.Record) (store.Change, error) { return store.DecideRepair(rec, in) })
}

func (s *Store) transition(ctx context.Context, resource string, f func(store.Record) (store.Change, error)) (store.Record, error) {
	if err := s.lock(ctx); err != nil {
		return store.Record{}, err
	}
	defer s.mu.Unlock()
	ch, err := f(s.peek(resource))
	if err != nil {
		return store.Record{}, err
	}
	s.apply(ch)
	return ch.Record.Clone(), nil
}
