package store_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/store"
)

// TestBeginResultCode: the one mapping from store decisions to problem
// codes. Every rejection maps to a code with a status; an unknown decision
// fails closed as STORE_UNAVAILABLE.
func TestBeginResultCode(t *testing.T) {
	paused := func(r store.PauseReason) store.Record {
		return store.Record{Resource: "r", Pause: &store.Pause{Reason: r}}
	}
	for _, tc := range []struct {
		res  store.BeginResult
		want fencegate.Code
	}{
		{store.BeginResult{Decision: store.DecisionProceed}, ""},
		{store.BeginResult{Decision: store.DecisionReplay}, ""},
		{store.BeginResult{Decision: store.DecisionBusy}, fencegate.CodeResourceBusy},
		{store.BeginResult{Decision: store.DecisionPaused, Record: paused(store.PauseOperator)}, fencegate.CodeResourcePaused},
		{store.BeginResult{Decision: store.DecisionPaused, Record: paused(store.PauseFenceRegression)}, fencegate.CodeFenceRegression},
		{store.BeginResult{Decision: store.DecisionMutationUnknown}, fencegate.CodeMutationUnknown},
		{store.BeginResult{Decision: store.DecisionSegmentConflict}, fencegate.CodeSegmentConflict},
		{store.BeginResult{Decision: store.DecisionStaleOwner}, fencegate.CodeStaleOwner},
		{store.BeginResult{Decision: store.DecisionFenceRegression}, fencegate.CodeFenceRegression},
		{store.BeginResult{Decision: store.DecisionSegmentGap}, fencegate.CodeSegmentGap},
		{store.BeginResult{Decision: "SOMETHING_NEW"}, fencegate.CodeStoreUnavailable},
	} {
		got := tc.res.Code()
		if got != tc.want {
			t.Errorf("%s (pause %+v): %q, want %q", tc.res.Decision, tc.res.Record.Pause, got, tc.want)
		}
		if got != "" && !got.Known() {
			t.Errorf("%s maps to %q, which has no status", tc.res.Decision, got)
		}
	}
}

// TestErrorCode: the one mapping from store errors to the codes (and so
// the statuses) the sidecar's own API and its admin API answer them with;
// a wrapped error maps as its kind, anything else fails closed as
// STORE_UNAVAILABLE.
func TestErrorCode(t *testing.T) {
	for _, tc := range []struct {
		err    error
		want   fencegate.Code
		status int
	}{
		{&store.InputError{Field: "resource", Reason: "empty"}, fencegate.CodeInvalidRequest, 400},
		{fmt.Errorf("read: %w", store.ErrNotFound), fencegate.CodeNotFound, 404},
		{store.ErrConflict, fencegate.CodeConflict, 409},
		{store.ErrNotPaused, fencegate.CodeConflict, 409},
		{store.ErrStillInFlight, fencegate.CodeConflict, 409},
		{fmt.Errorf("resolve: %w", store.ErrNotInFlight), fencegate.CodeConflict, 409},
		{store.ErrClosed, fencegate.CodeStoreUnavailable, 503},
		{errors.New("connection refused"), fencegate.CodeStoreUnavailable, 503},
	} {
		got := store.ErrorCode(tc.err)
		if got != tc.want || got.Status() != tc.status {
			t.Errorf("ErrorCode(%v) = %s (%d), want %s (%d)", tc.err, got, got.Status(), tc.want, tc.status)
		}
	}
}
