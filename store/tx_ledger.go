package store

import (
	"context"
	"slices"
	"time"
)

// The enforcement ledger and the trust pins of NewTxBackend's Store: each
// change one transaction over the entry (the whole pin set), decided by
// DecideEnforcement (DecideTrust) at the backend's time.

func (b *txBackend) RecordEnforcement(ctx context.Context, in EnforcementInput) (Enforcement, error) {
	if err := in.Validate(); err != nil {
		return Enforcement{}, err
	}
	return decideAt(ctx, b, "record enforcement",
		func(tx Tx) (*Enforcement, error) { return tx.Enforcement(in.Shape) },
		func(cur *Enforcement, now time.Time) (Enforcement, Change, error) {
			in := in
			in.Now = at(in.Now, now)
			return DecideEnforcement(cur, in)
		})
}

func (b *txBackend) RecordTrust(ctx context.Context, in TrustInput) ([]TrustedKey, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	out, err := decideAt(ctx, b, "record trust",
		func(tx Tx) ([]TrustedKey, error) { return tx.TrustedKeys() },
		func(cur []TrustedKey, now time.Time) ([]TrustedKey, Change, error) {
			in := in
			in.Now = at(in.Now, now)
			return DecideTrust(cur, in)
		})
	return slices.Clone(out), err
}

// decideAt is one transaction over a single entry: load it, decide at the
// backend's time (zero: the caller's, which decide keeps) and write the
// Change. On an error it returns the zero value.
func decideAt[S, R any](ctx context.Context, b *txBackend, op string, load func(Tx) (S, error), decide func(S, time.Time) (R, Change, error)) (R, error) {
	var out R
	err := b.s.Update(ctx, op, func(tx Tx) error {
		cur, err := load(tx)
		if err != nil {
			return err
		}
		now, err := tx.Now()
		if err != nil {
			return err
		}
		next, ch, err := decide(cur, now)
		if err != nil {
			return err
		}
		out = next
		_, err = writeChange(tx, ch)
		return err
	})
	if err != nil {
		var zero R
		return zero, err
	}
	return out, nil
}
