package store

import (
	"errors"
	"strconv"
	"time"
)

// Sentinel errors. Backends and the pure transition functions wrap them with
// %w and a "store: " prefix; test with errors.Is.
var (
	// ErrInvalidInput: an input field is out of range, empty, oversized or
	// malformed. Returned as an *InputError; nothing was read or written.
	ErrInvalidInput = errors.New("store: invalid input")

	// ErrNotFound: no record, receipt or entry exists for the given key.
	ErrNotFound = errors.New("store: not found")

	// ErrNotInFlight: the resource has no in-flight mutation matching the
	// given (fence, root, seq), and no receipt that would make the call an
	// idempotent repeat.
	ErrNotInFlight = errors.New("store: no matching mutation in flight")

	// ErrStillInFlight: Resolve was called for a mutation that is in flight,
	// not declared unknown and not past its deadline; its owner may still
	// Commit or Abort it.
	ErrStillInFlight = errors.New("store: mutation still in flight")

	// ErrOutcomeUnknown: Abort was called for a mutation whose outcome has been
	// declared unknown; only Resolve (or a Commit of its answer) may clear it.
	ErrOutcomeUnknown = errors.New("store: mutation outcome unknown, resolve it")

	// ErrNotQuiet: Resolve(not applied) on evidence gathered before the
	// mutation's quiet time (Mutation.QuietBy): the backend may still apply
	// it, so "not found yet" does not prove "never". Returned as a
	// *NotQuietError; nothing was written. Applied may be settled at any
	// time.
	ErrNotQuiet = errors.New("store: the mutation may still take effect")

	// ErrConflict: the call contradicts what the store already knows, e.g.
	// Resolve(not applied) for a mutation that has a receipt.
	ErrConflict = errors.New("store: conflicts with stored state")

	// ErrKeyInUse: an UNPIN without Force of a trusted key that may have
	// signed a grant still held (TrustedKey.InUseUntil after Now).
	ErrKeyInUse = errors.New("store: trusted key still in use")

	// ErrNotPaused: Resume was called for a resource that is not paused.
	ErrNotPaused = errors.New("store: resource not paused")

	// ErrClosed: the store has been closed.
	ErrClosed = errors.New("store: closed")

	// ErrCorrupt: stored state cannot be decoded, has an unknown schema
	// version, or violates an invariant of the store.
	ErrCorrupt = errors.New("store: corrupt state")
)

// InputError reports which input field was rejected and why. It wraps
// ErrInvalidInput.
type InputError struct {
	// Field is the input field's name, e.g. "fence" or "response.header".
	Field string
	// Reason says what is wrong with it.
	Reason string
}

// Error implements error.
func (e *InputError) Error() string {
	return "store: invalid input: " + e.Field + ": " + e.Reason
}

// Unwrap returns ErrInvalidInput.
func (e *InputError) Unwrap() error { return ErrInvalidInput }

// NotQuietError is ErrNotQuiet with the mutation's quiet time.
type NotQuietError struct {
	// OperationID and Resource name the mutation.
	OperationID, Resource string
	// QuietAt is the mutation's quiet time (Mutation.QuietBy) on the
	// store's clock.
	QuietAt time.Time
	// Remaining is how long after the evidence the quiet time is, on the
	// store's clock: evidence gathered that much later can settle it.
	Remaining time.Duration
}

// Error implements error.
func (e *NotQuietError) Error() string {
	return "store: resolve " + e.OperationID + " of " + strconv.Quote(e.Resource) + " as not applied: the mutation may still take effect until " +
		e.QuietAt.Format(time.RFC3339Nano) + " (" + e.Remaining.String() + " after the evidence)"
}

// Unwrap returns ErrNotQuiet.
func (e *NotQuietError) Unwrap() error { return ErrNotQuiet }

func invalid(field, reason string) error {
	return &InputError{Field: field, Reason: reason}
}

// invalidErr is the *InputError of field for a contract validator's error
// (nil for nil).
func invalidErr(field string, err error) error {
	if err == nil {
		return nil
	}
	return invalid(field, err.Error())
}
