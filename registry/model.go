package registry

import "time"

// Meta is the registry-wide state.
type Meta struct {
	// IssuerEpoch is the current issuer epoch (starts at 1). Grants of an
	// older epoch are revoked.
	IssuerEpoch uint64 `json:"issuerEpoch"`
	// Revision counts the registry's writes that a grant or a proof can
	// state (grants, renewals, releases, epoch bumps, floors, policies), like
	// an etcd revision. It is the backendRevision of grants and proofs.
	Revision uint64 `json:"revision"`
	// FenceFloor is the global floor: every fence issued from now on is
	// greater than it (set after a restore from an old snapshot).
	FenceFloor uint64 `json:"fenceFloor"`
	// PolicySeq is the last policy generation handed out.
	PolicySeq uint64 `json:"policySeq"`
	// Lineage is the registry's issuer lineage (fencegate.ValidateLineage):
	// set by the first write that finds it empty (the start of an empty
	// data set, DecideInit, or the first grant), never changed after, and
	// carried by every grant as its "lineage" claim. A data set restored
	// from a backup keeps the backup's; an emptied or new one gets a new
	// one.
	Lineage string `json:"lineage,omitempty"`
	// Time is the registry's time (time.go): the latest time, Unix ms,
	// at which any registry process committed a lease decision (a grant,
	// a renewal, a release, a revocation, an observed end) or a policy
	// change. Every such step raises it to the time it decided at and
	// nothing lowers it; a step decides no earlier than it, within the
	// process's clock skew budget (DecisionTime). 0 in a data set written
	// before it existed.
	Time int64 `json:"time,omitempty"`
}

// current is m as the registry reads it: a meta never written yet (a new
// registry) is at issuer epoch 1.
func (m Meta) current() Meta {
	if m.IssuerEpoch == 0 {
		m.IssuerEpoch = 1
	}
	return m
}

// ResourceRecord is the per-resource state: the fence sequence and the
// current holder.
type ResourceRecord struct {
	Resource string `json:"resource"`
	// LastFence is the highest fence token ever issued for the resource.
	LastFence uint64 `json:"lastFence"`
	// FenceFloor is the resource's own floor (see Meta.FenceFloor).
	FenceFloor uint64 `json:"fenceFloor"`
	// Holder is the lease ID of the last granted lease (it may since have
	// expired, been released or revoked; LeaseState tells).
	Holder string `json:"holder,omitempty"`
	// FreedAt is when the last lease ended (release, observed expiry or
	// revocation), Unix ms; zero while held.
	FreedAt int64 `json:"freedAt,omitempty"`
}

// LeaseRecord is one granted lease and its immutable grant: the registry's
// one lease type. Everything else about a lease is computed from it
// (LeaseState, LeaseView) or is its wire form (fencegate.Lease, made by the
// HTTP API).
type LeaseRecord struct {
	Lease     string `json:"lease"`
	GrantID   string `json:"grantId"`
	Resource  string `json:"resource"`
	Owner     string `json:"owner"`
	RequestID string `json:"requestId"`
	OpClass   string `json:"opClass"`
	// Lineage is the meta's lineage when the lease was granted (its
	// grant's "lineage" claim); "" for a lease granted before lineages.
	Lineage          string `json:"lineage,omitempty"`
	Fence            uint64 `json:"fenceToken"`
	IssuerEpoch      uint64 `json:"issuerEpoch"`
	PolicyGeneration uint64 `json:"policyGeneration"`
	Revision         uint64 `json:"backendRevision"`
	TTLMs            uint64 `json:"ttlMs"`
	IssuedAt         int64  `json:"issuedAt"`
	ExpiresAt        int64  `json:"expiresAt"`
	// State is the stored state: HELD until a release, an observed expiry or
	// a revocation is written. LeaseState computes the effective state.
	State   string `json:"state"`
	EndedAt int64  `json:"endedAt,omitempty"`
	// Token is the lockGrant.v1 compact JWS and Digest its digest; both are
	// set by SealGrant before the lease is first written.
	Token  string `json:"grant"`
	Digest string `json:"grantDigest"`
}

// LeaseView is a lease with its effective state and the registry's current
// values, read in one step: what a status proof states (see ProofClaims).
type LeaseView struct {
	Lease LeaseRecord
	// State is the effective state at the read's time (LeaseState).
	State string
	// Meta is the registry-wide state at the read.
	Meta Meta
	// PolicyGeneration is the resource's current policy generation.
	PolicyGeneration uint64
	// At is the time the step decided State at (DecisionTime: the
	// process's clock raised toward the registry's time). A proof of the
	// view is signed at it.
	At time.Time
}

// ResourceView is a resource's record with its holder, if any.
type ResourceView struct {
	Record           ResourceRecord
	Holder           *LeaseView
	PolicyGeneration uint64
	Meta             Meta
}

// ms converts a time to Unix milliseconds.
func ms(t time.Time) int64 { return t.UnixMilli() }
