package store

import (
	"context"
	"slices"
)

// The enforcement ledger and the trust pins of NewTxBackend's Store: each
// change one transaction over the entry (the whole pin set), decided by
// DecideEnforcement (DecideTrust) at the backend's time.

func (b *txBackend) RecordEnforcement(ctx context.Context, in EnforcementInput) (Enforcement, error) {
	if err := in.Validate(); err != nil {
		return Enforcement{}, err
	}
	var out Enforcement
	err := b.s.Update(ctx, "record enforcement", func(tx Tx) error {
		cur, err := tx.Enforcement(in.Shape)
		if err != nil {
			return err
		}
		now, err := tx.Now()
		if err != nil {
			return err
		}
		in := in
		in.Now = at(in.Now, now)
		next, ch, err := DecideEnforcement(cur, in)
		if err != nil {
			return err
		}
		out = next
		_, err = writeChange(tx, ch)
		return err
	})
	if err != nil {
		return Enforcement{}, err
	}
	return out, nil
}

func (b *txBackend) RecordTrust(ctx context.Context, in TrustInput) ([]TrustedKey, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	var out []TrustedKey
	err := b.s.Update(ctx, "record trust", func(tx Tx) error {
		cur, err := tx.TrustedKeys()
		if err != nil {
			return err
		}
		now, err := tx.Now()
		if err != nil {
			return err
		}
		in := in
		in.Now = at(in.Now, now)
		next, ch, err := DecideTrust(cur, in)
		if err != nil {
			return err
		}
		out = slices.Clone(next)
		_, err = writeChange(tx, ch)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
