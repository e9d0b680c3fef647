package bolt

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/fencegate/fencegate/store"
)

// loadTrust returns the trust pins, by kid (the bucket's byte order).
func loadTrust(tx *bbolt.Tx) ([]store.TrustedKey, error) {
	b := tx.Bucket(bucketTrust)
	out := []store.TrustedKey{}
	err := b.ForEach(func(k, _ []byte) error {
		var p store.TrustedKey
		if _, err := get(b, k, &p); err != nil {
			return err
		}
		if p.Kid != string(k) {
			return fmt.Errorf("store: bolt: trust pin under %q names %q: %w", k, p.Kid, store.ErrCorrupt)
		}
		out = append(out, p)
		return nil
	})
	return out, err
}

// TrustedKeys implements store.Store.
func (s *Store) TrustedKeys(ctx context.Context) ([]store.TrustedKey, error) {
	var out []store.TrustedKey
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var err error
		out, err = loadTrust(tx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RecordTrust implements store.Store. Like RecordEnforcement it decides in
// a read-only transaction first, so a change that changes nothing (an
// IN_USE that does not extend) costs no fsync; a change is decided again
// and written in a durable write transaction, replacing the bucket's pins.
func (s *Store) RecordTrust(ctx context.Context, in store.TrustInput) ([]store.TrustedKey, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	var (
		next    []store.TrustedKey
		changed bool
		ferr    error
	)
	decide := func(tx *bbolt.Tx) error {
		cur, err := loadTrust(tx)
		if err != nil {
			return err
		}
		var ch store.Change
		next, ch, ferr = store.DecideTrust(cur, in)
		changed = ch.Writes()
		return nil
	}
	if err := s.view(ctx, decide); err != nil {
		return nil, err
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
		if err := tx.DeleteBucket(bucketTrust); err != nil {
			return err
		}
		b, err := tx.CreateBucket(bucketTrust)
		if err != nil {
			return err
		}
		for _, p := range next {
			if err := put(b, []byte(p.Kid), p); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return nil, store.ErrClosed
	}
	if err != nil {
		return nil, err
	}
	return next, ferr
}
