package rollback

// State is what a process has seen of the registry's state; it is the
// state file's content (JSON, the format registry/redis has always
// written).
type State struct {
	Revision  uint64 `json:"revision"`
	Epoch     uint64 `json:"issuerEpoch"`
	PolicySeq uint64 `json:"policySeq"`
	MaxFence  uint64 `json:"maxFence"`
	// Time is the highest registry time (Meta.Time, Unix ms) seen: a
	// recovery keeps the registry's time from going back with the restore.
	Time int64 `json:"time,omitempty"`
	// Ceiling is at least every fence this process issued (state file
	// only; zero without one).
	Ceiling uint64 `json:"fenceCeiling"`
}
