package redis

import (
	"context"
	"time"

	"github.com/fencegate/fencegate/store"
)

// Begin implements store.Store.
func (s *Store) Begin(ctx context.Context, in store.BeginInput) (store.BeginResult, error) {
	if err := in.Validate(); err != nil {
		return store.BeginResult{}, err
	}
	ctx, err := s.enter(ctx)
	if err != nil {
		return store.BeginResult{}, err
	}
	key := store.ReceiptKey{Resource: in.Resource, Fence: in.Fence, Seq: in.Seq}
	var res store.BeginResult
	_, q, _, err := s.transition(ctx, "begin", in.Resource, &key, func(rec store.Record, rc *store.Receipt, srv time.Time) (store.Change, error) {
		r, ch, err := store.Decide(rec, rc, beginAt(in, srv))
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
	ctx, err := s.enter(ctx)
	if err != nil {
		return store.Receipt{}, err
	}
	key := store.ReceiptKey{Resource: in.Resource, Fence: in.Fence, Seq: in.Seq}
	ch, _, _, err := s.transition(ctx, "commit", in.Resource, &key, func(rec store.Record, rc *store.Receipt, srv time.Time) (store.Change, error) {
		in := in
		in.Now = at(in.Now, srv)
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
	ctx, err := s.enter(ctx)
	if err != nil {
		return store.Mutation{}, err
	}
	ch, _, _, err := s.transition(ctx, "mark unknown", in.Resource, nil, func(rec store.Record, _ *store.Receipt, srv time.Time) (store.Change, error) {
		in := in
		in.Now = at(in.Now, srv)
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
	ctx, err := s.enter(ctx)
	if err != nil {
		return store.ResolveResult{}, err
	}
	key := store.ReceiptKey{Resource: in.Resource, Fence: in.Fence, Seq: in.Seq}
	ch, _, rec, err := s.transition(ctx, "resolve", in.Resource, &key, func(rec store.Record, rc *store.Receipt, srv time.Time) (store.Change, error) {
		in := in
		in.Now = at(in.Now, srv)
		return store.DecideResolve(rec, rc, in, s.bodyLimit)
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
	return s.recordTransition(ctx, "abort", in.Resource, func(rec store.Record, srv time.Time) (store.Change, error) {
		in := in
		in.Now = at(in.Now, srv)
		return store.DecideAbort(rec, in)
	})
}

// Pause implements store.Store.
func (s *Store) Pause(ctx context.Context, in store.PauseInput) (store.Record, error) {
	if err := in.Validate(); err != nil {
		return store.Record{}, err
	}
	return s.recordTransition(ctx, "pause", in.Resource, func(rec store.Record, srv time.Time) (store.Change, error) {
		in := in
		in.Now = at(in.Now, srv)
		return store.DecidePause(rec, in)
	})
}

// Resume implements store.Store.
func (s *Store) Resume(ctx context.Context, resource string) (store.Record, error) {
	if err := store.ValidateResource(resource); err != nil {
		return store.Record{}, err
	}
	return s.recordTransition(ctx, "resume", resource, func(rec store.Record, _ time.Time) (store.Change, error) { return store.DecideResume(rec, resource) })
}

// Repair implements store.Store. It decides at the server's TIME: the
// repaired marker's UnknownSince and Deadline, and the pause's time.
func (s *Store) Repair(ctx context.Context, in store.RepairInput) (store.Record, error) {
	if err := in.Validate(); err != nil {
		return store.Record{}, err
	}
	return s.recordTransition(ctx, "repair", in.Resource, func(rec store.Record, srv time.Time) (store.Change, error) {
		in := in
		in.Now = at(in.Now, srv)
		return store.DecideRepair(rec, in)
	})
}

func (s *Store) recordTransition(ctx context.Context, op, resource string, f func(store.Record, time.Time) (store.Change, error)) (store.Record, error) {
	ctx, err := s.enter(ctx)
	if err != nil {
		return store.Record{}, err
	}
	ch, _, _, err := s.transition(ctx, op, resource, nil, func(rec store.Record, _ *store.Receipt, srv time.Time) (store.Change, error) { return f(rec, srv) })
	if err != nil {
		return store.Record{}, err
	}
	return ch.Record, nil
}
