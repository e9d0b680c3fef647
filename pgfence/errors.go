package pgfence

import (
	"errors"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/store"
)

// ErrReplayed is matched (errors.Is) by the error of an Apply whose
// (fence, segment) the store already accepted with the same payload: the
// write was applied once and must not be again. The error is a *Replayed.
var ErrReplayed = errors.New("pgfence: replay of an accepted segment")

// Replayed is a replay: the receipt of the write accepted before.
type Replayed struct {
	Receipt store.Receipt
}

// Error implements error.
func (r *Replayed) Error() string {
	return "pgfence: replay of " + r.Receipt.OperationID + " (receipt " + r.Receipt.ID + ")"
}

// Is matches ErrReplayed.
func (r *Replayed) Is(target error) bool { return target == ErrReplayed }

// storeFailure is a failure of the database or of the store's checks:
// the STORE_UNAVAILABLE problem and the cause, both reachable with
// errors.As and errors.Is (postgres.IsRetryable looks at the cause).
type storeFailure struct {
	problem *fencegate.Problem
	err     error
}

func failure(err error) error {
	p := fencegate.NewProblem(fencegate.CodeStoreUnavailable, "the fenced store could not decide: "+err.Error()).With("retryable", true)
	return &storeFailure{problem: p, err: err}
}

func (f *storeFailure) Error() string   { return "pgfence: " + f.err.Error() }
func (f *storeFailure) Unwrap() []error { return []error{f.problem, f.err} }
