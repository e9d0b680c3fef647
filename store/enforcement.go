package store

import (
	"fmt"
	"time"
)

// Enforcement ledger limits.
const (
	// MaxShapeLen is the maximum length in bytes of a route shape.
	MaxShapeLen = 1024
	// MaxEnforcementDetailLen is the maximum length in bytes of an
	// enforcement event's detail.
	MaxEnforcementDetailLen = MaxDetailLen
	// MaxEnforcementHistory is the number of events a ledger entry keeps;
	// older ones are dropped.
	MaxEnforcementHistory = 64
)

// Enforcement event kinds.
const (
	// EnforcementEnforce: the route shape is now enforced.
	EnforcementEnforce = "ENFORCE"
	// EnforcementForcedDowngrade: an operator forced an enforced shape back
	// to a weaker mode.
	EnforcementForcedDowngrade = "FORCED_DOWNGRADE"
)

// Enforcement is the enforcement ledger's entry of one route shape: whether
// it is enforced now, and since when. Once a shape has been enforced, the
// sidecar refuses to leave enforce mode unless an operator forces it, and
// the ledger lives in the fenced store so that every replica sharing the
// store, and a fresh pod on an empty disk, see it.
type Enforcement struct {
	// Shape is the route's shape: method, a space and the path with
	// parameter names erased, e.g. "PUT /v1/items/{}".
	Shape string `json:"shape"`
	// EnforcedSince is when the shape was (last) enforced; zero when it is
	// not enforced now (a forced downgrade cleared it).
	EnforcedSince time.Time `json:"enforcedSince,omitzero"`
	// History holds the newest MaxEnforcementHistory events, oldest first.
	History []EnforcementEvent `json:"history,omitempty"`
}

// EnforcementEvent is one change of a ledger entry.
type EnforcementEvent struct {
	// At is the Now of the change.
	At time.Time `json:"at"`
	// Kind is ENFORCE or FORCED_DOWNGRADE.
	Kind string `json:"kind"`
	// Detail is free text for operators (e.g. the mode downgraded to).
	Detail string `json:"detail,omitempty"`
}

// Enforced reports whether the shape is enforced now.
func (e Enforcement) Enforced() bool { return !e.EnforcedSince.IsZero() }

// Clone returns a deep copy of e.
func (e Enforcement) Clone() Enforcement {
	if e.History != nil {
		e.History = append([]EnforcementEvent(nil), e.History...)
	}
	return e
}

// EnforcementInput records an event in the ledger entry of a shape.
type EnforcementInput struct {
	// Shape is the route shape (see Enforcement.Shape).
	Shape string
	// Kind is ENFORCE or FORCED_DOWNGRADE.
	Kind string
	// Detail is free text for operators (at most MaxEnforcementDetailLen
	// bytes).
	Detail string
	// Now is the caller's current time.
	Now time.Time
}

// Validate checks an enforcement input: a non-empty shape of at most
// MaxShapeLen bytes of valid UTF-8 without control characters, a known kind,
// a bounded detail and a Now.
func (in EnforcementInput) Validate() error {
	if err := checkText("shape", in.Shape, MaxShapeLen, true); err != nil {
		return err
	}
	if in.Kind != EnforcementEnforce && in.Kind != EnforcementForcedDowngrade {
		return invalid("kind", "want "+EnforcementEnforce+" or "+EnforcementForcedDowngrade)
	}
	if err := checkText("detail", in.Detail, MaxEnforcementDetailLen, false); err != nil {
		return err
	}
	return checkNow(in.Now)
}

// DecideEnforcement is RecordEnforcement as a pure function over the stored
// entry of in.Shape (nil if none). ENFORCE of a shape not enforced now sets
// EnforcedSince and appends an event; of a shape already enforced it changes
// nothing. FORCED_DOWNGRADE of an enforced shape clears EnforcedSince and
// appends an event; of a shape not enforced now it changes nothing (there is
// nothing to downgrade), so concurrent replicas applying the same order
// record it once. History keeps the newest MaxEnforcementHistory events.
// It returns the entry after the change (a fresh copy) and the change to
// write: Change.Enforcement, another copy, when the entry must be stored.
func DecideEnforcement(cur *Enforcement, in EnforcementInput) (Enforcement, Change, error) {
	if err := in.Validate(); err != nil {
		return Enforcement{}, Change{}, err
	}
	if cur != nil && cur.Shape != in.Shape {
		return Enforcement{}, Change{}, fmt.Errorf("store: enforcement: entry of %q for %q: %w", cur.Shape, in.Shape, ErrCorrupt)
	}
	next := Enforcement{Shape: in.Shape}
	if cur != nil {
		next = cur.Clone()
	}
	if len(next.History) > MaxEnforcementHistory {
		return Enforcement{}, Change{}, fmt.Errorf("store: enforcement: entry of %q holds %d events, more than %d: %w",
			in.Shape, len(next.History), MaxEnforcementHistory, ErrCorrupt)
	}
	now := normTime(in.Now)
	switch {
	case in.Kind == EnforcementEnforce && !next.Enforced():
		next.EnforcedSince = now
	case in.Kind == EnforcementForcedDowngrade && next.Enforced():
		next.EnforcedSince = time.Time{}
	default:
		return next, Change{}, nil
	}
	ev := EnforcementEvent{At: now, Kind: in.Kind, Detail: in.Detail}
	if len(next.History) == MaxEnforcementHistory {
		next.History = append(next.History[:0:0], next.History[1:]...)
	}
	next.History = append(next.History, ev)
	stored := next.Clone()
	return next, Change{Enforcement: &stored}, nil
}
