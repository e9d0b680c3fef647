package store

import (
	"fmt"
	"time"
)

// PauseInput pauses a resource: every Begin answers PAUSED until Resume.
type PauseInput struct {
	// Resource is the canonical resource ID.
	Resource string
	// Reason is FENCE_REGRESSION or OPERATOR.
	Reason PauseReason
	// Detail is free text for operators (at most MaxDetailLen bytes).
	Detail string
	// Now is the caller's current time.
	Now time.Time
}

// DecidePause is Pause as a pure function. A resource without a record gets
// one (highest fence 0). An already paused resource keeps its first pause.
func DecidePause(rec Record, in PauseInput) (Change, error) {
	if err := in.Validate(); err != nil {
		return Change{}, err
	}
	next := rec.Clone()
	next.Resource = in.Resource
	if next.Pause != nil {
		return Change{Record: next}, nil
	}
	next.Pause = &Pause{Reason: in.Reason, Detail: in.Detail, At: normTime(in.Now)}
	return Change{Record: next, WriteRecord: true}, nil
}

// DecideResume is Resume as a pure function: it clears the pause and keeps
// everything else, the highest fence above all. ErrNotFound without a
// record, ErrNotPaused when not paused.
func DecideResume(rec Record, resource string) (Change, error) {
	if err := ValidateResource(resource); err != nil {
		return Change{}, err
	}
	if !rec.Exists() {
		return Change{}, fmt.Errorf("store: resume %q: %w", resource, ErrNotFound)
	}
	if rec.Pause == nil {
		return Change{}, fmt.Errorf("store: resume %q: %w", resource, ErrNotPaused)
	}
	next := rec.Clone()
	next.Pause = nil
	return Change{Record: next, WriteRecord: true}, nil
}
