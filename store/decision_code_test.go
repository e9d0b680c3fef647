package store_test

import (
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
