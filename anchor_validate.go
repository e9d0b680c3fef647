package fencegate

import "fmt"

// Validation of the anchor API's bodies (anchor.go). Each check states the
// request's shape only; what the registry holds decides the rest. Errors
// wrap ErrInvalidAnchor.

// ValidateGeneration checks a store generation ID: 1..MaxGenerationLen
// bytes of printable UTF-8.
func ValidateGeneration(s string) error {
	return checkAnchorText("generation", s, MaxGenerationLen, true)
}

// Validate checks one anchor step: a valid resource, a known op, a valid
// Prior and Next, and the shape of the op:
//   - BEGIN: Next holds the mutation begun (Next.Pending);
//   - SETTLE: Prior holds the pending mutation to drop, Next none;
//   - PAUSE: Next is paused (Next.Paused);
//   - RESUME and SEED: no more.
func (it AnchorItem) Validate() error {
	if err := ValidateResource(it.Resource); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidAnchor, err)
	}
	if err := it.Prior.Validate(); err != nil {
		return fmt.Errorf("prior: %w", err)
	}
	if err := it.Next.Validate(); err != nil {
		return fmt.Errorf("next: %w", err)
	}
	switch it.Op {
	case AnchorBegin:
		if it.Next.Pending == nil {
			return fmt.Errorf("%w: BEGIN of %s: next holds no pending mutation", ErrInvalidAnchor, it.Resource)
		}
	case AnchorSettle:
		if it.Prior.Pending == nil || it.Next.Pending != nil {
			return fmt.Errorf("%w: SETTLE of %s: prior must hold the pending mutation and next none", ErrInvalidAnchor, it.Resource)
		}
	case AnchorPause:
		if it.Next.Paused == "" {
			return fmt.Errorf("%w: PAUSE of %s: next is not paused", ErrInvalidAnchor, it.Resource)
		}
	case AnchorResume, AnchorSeed:
	default:
		return fmt.Errorf("%w: op %q (want BEGIN, SETTLE, PAUSE, RESUME or SEED)", ErrInvalidAnchor, it.Op)
	}
	return nil
}

// Validate checks an anchor request: a valid generation and 1 to
// MaxAnchorBatch valid items (several may name one resource: they are
// decided in order).
func (r AnchorRequest) Validate() error {
	if err := ValidateGeneration(r.Generation); err != nil {
		return err
	}
	if len(r.Items) == 0 || len(r.Items) > MaxAnchorBatch {
		return fmt.Errorf("%w: %d items (want 1 to %d)", ErrInvalidAnchor, len(r.Items), MaxAnchorBatch)
	}
	for i, it := range r.Items {
		if err := it.Validate(); err != nil {
			return fmt.Errorf("item %d: %w", i, err)
		}
	}
	return nil
}

// Validate checks a ledger event: a shape of 1..MaxShapeLen bytes and a
// detail of at most MaxLedgerDetailLen, printable UTF-8, and a kind of
// ENFORCE or FORCED_DOWNGRADE.
func (b LedgerBody) Validate() error {
	if err := checkAnchorText("shape", b.Shape, MaxShapeLen, true); err != nil {
		return err
	}
	if b.Kind != LedgerEnforce && b.Kind != LedgerForcedDowngrade {
		return fmt.Errorf("%w: kind %q (want %s or %s)", ErrInvalidAnchor, b.Kind, LedgerEnforce, LedgerForcedDowngrade)
	}
	return checkAnchorText("detail", b.Detail, MaxLedgerDetailLen, false)
}
