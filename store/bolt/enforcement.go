package bolt

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/fencegate/fencegate/store"
)

// loadEnforcement returns the ledger entry of shape, or nil.
func loadEnforcement(tx *bbolt.Tx, shape string) (*store.Enforcement, error) {
	var e store.Enforcement
	ok, err := get(tx.Bucket(bucketEnforcement), []byte(shape), &e)
	if err != nil || !ok {
		return nil, err
	}
	if e.Shape != shape {
		return nil, fmt.Errorf("store: bolt: enforcement entry under %q names %q: %w", shape, e.Shape, store.ErrCorrupt)
	}
	return &e, nil
}

// Enforcements implements store.Store. Keys are shapes, so the bucket's
// byte order is the order by shape.
func (s *Store) Enforcements(ctx context.Context) ([]store.Enforcement, error) {
	var out []store.Enforcement
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		out = []store.Enforcement{}
		return tx.Bucket(bucketEnforcement).ForEach(func(k, _ []byte) error {
			e, err := loadEnforcement(tx, string(k))
			if err != nil {
				return err
			}
			out = append(out, *e)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RecordEnforcement implements store.Store. It decides in a read-only
// transaction first, so that a repeated ENFORCE costs no fsync; a change is
// decided again and written in a durable write transaction.
func (s *Store) RecordEnforcement(ctx context.Context, in store.EnforcementInput) (store.Enforcement, error) {
	if err := in.Validate(); err != nil {
		return store.Enforcement{}, err
	}
	var (
		next    store.Enforcement
		changed bool
		ferr    error
	)
	decide := func(tx *bbolt.Tx) error {
		cur, err := loadEnforcement(tx, in.Shape)
		if err != nil {
			return err
		}
		var ch store.Change
		next, ch, ferr = store.DecideEnforcement(cur, in)
		changed = ch.Writes()
		return nil
	}
	if err := s.view(ctx, decide); err != nil {
		return store.Enforcement{}, err
	}
	if ferr != nil || !changed {
		return next, ferr
	}
	err := s.write(ctx, func(tx *bbolt.Tx) error {
		if err := decide(tx); err != nil {
			return err
		}
		if ferr != nil || !changed {
			return nil
		}
		return put(tx.Bucket(bucketEnforcement), []byte(in.Shape), next)
	})
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return store.Enforcement{}, store.ErrClosed
	}
	if err != nil {
		return store.Enforcement{}, err
	}
	return next, ferr
}
