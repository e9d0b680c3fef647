package rollback

import (
	"errors"
	"fmt"

	"github.com/fencegate/fencegate/registry"
)

// RecoveredMeta is m after a rollback, given what this process saw: an
// epoch above every epoch seen (unless another process already bumped
// past it), a floor at least floor, a revision above every revision seen,
// a policy generation and a registry time (Meta.Time) no lower than any
// seen. It starts from m and
// only raises those fields, so every other field of the meta read (the
// lineage, and any field added later) is kept as it was.
func RecoveredMeta(m registry.Meta, seen State, floor uint64) registry.Meta {
	if m.IssuerEpoch == 0 {
		m.IssuerEpoch = 1 // a meta never written is at epoch 1
	}
	if m.IssuerEpoch <= seen.Epoch {
		m.IssuerEpoch = seen.Epoch + 1
	}
	m.FenceFloor = max(m.FenceFloor, floor)
	m.Revision = max(m.Revision, seen.Revision) + 1
	m.PolicySeq = max(m.PolicySeq, seen.PolicySeq)
	m.Time = max(m.Time, seen.Time)
	return m
}

// Retry runs step; when it found the state rolled back (ErrRolledBack),
// it runs heal (the backend's recovery) with that error, then step again. A second rollback in
// a row is an error (registry.ErrBackend with ErrRolledBack): the state
// keeps going back under this process, and nothing is decided on it.
func Retry(step func() error, heal func(cause error) error) error {
	err := step()
	if !errors.Is(err, ErrRolledBack) {
		return err
	}
	if err := heal(err); err != nil {
		return err
	}
	if err = step(); errors.Is(err, ErrRolledBack) {
		return fmt.Errorf("%w: %w", registry.ErrBackend, err)
	}
	return err
}

// RaiseFloor is the step a backend runs at Open with a state file: it
// raises the global fence floor to floor (the file's ceiling, Floor), so
// that every fence the process issues from now on exceeds every fence it
// issued before, whatever the store lost meanwhile. It writes nothing
// when the floor is already there.
func RaiseFloor(floor uint64) func(registry.Tx) error {
	return func(t registry.Tx) error {
		m, err := t.Meta()
		if err != nil || m.FenceFloor >= floor {
			return err
		}
		m.FenceFloor = floor
		m.Revision++
		return t.PutMeta(m)
	}
}
