package store

import "github.com/fencegate/fencegate"

// Code is the problem code the sidecar answers a Begin with, the one
// mapping from store decisions to the contract's codes: "" for PROCEED
// and REPLAY (not rejections), RESOURCE_BUSY for BUSY, FENCE_REGRESSION
// for a resource paused by a fence regression or a store loss (Repair) and
// RESOURCE_PAUSED for one an operator paused, the decision's own code for the contract's codes, and
// STORE_UNAVAILABLE (fail closed) for a decision it does not know.
func (r BeginResult) Code() fencegate.Code {
	switch r.Decision {
	case DecisionProceed, DecisionReplay:
		return ""
	case DecisionBusy:
		return fencegate.CodeResourceBusy
	case DecisionPaused:
		if p := r.Record.Pause; p != nil && (p.Reason == PauseFenceRegression || p.Reason == PauseStoreLoss) {
			return fencegate.CodeFenceRegression
		}
		return fencegate.CodeResourcePaused
	case DecisionMutationUnknown, DecisionSegmentConflict, DecisionStaleOwner, DecisionFenceRegression, DecisionSegmentGap:
		return fencegate.Code(r.Decision)
	}
	return fencegate.CodeStoreUnavailable
}
