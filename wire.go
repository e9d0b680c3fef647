package fencegate

import "time"

// The registry API's JSON wire types. Integers are exact JSON integers
// (fence tokens may exceed 2^53: decode them into 64-bit integers, never
// floating point).

// AcquireBody is the body of POST /v1/leases.
type AcquireBody struct {
	Resource  string `json:"resource"`
	RequestID string `json:"requestId"`
	// TTLMs is the lease TTL in milliseconds (0: the registry's default).
	TTLMs int64 `json:"ttlMs,omitempty"`
	// OpClass is the operation class (default "write").
	OpClass string `json:"opClass,omitempty"`
	// WaitMs > 0 waits up to that long for the holder to release or expire.
	WaitMs int64 `json:"waitMs,omitempty"`
}

// RenewBody is the body of POST /v1/leases/{lease}/renew (optional).
type RenewBody struct {
	// TTLMs is the new TTL from now in milliseconds. 0 (or no body) renews
	// by the lease's own TTL (its ttlMs), never by the registry's default.
	TTLMs int64 `json:"ttlMs,omitempty"`
}

// Lease is the answer of acquire, lookup, renew, release and status.
type Lease struct {
	Lease            string    `json:"lease"`
	Resource         string    `json:"resource"`
	Owner            string    `json:"owner"`
	RequestID        string    `json:"requestId"`
	OpClass          string    `json:"opClass"`
	State            string    `json:"state"`
	FenceToken       uint64    `json:"fenceToken"`
	IssuerEpoch      uint64    `json:"issuerEpoch"`
	PolicyGeneration uint64    `json:"policyGeneration"`
	BackendRevision  uint64    `json:"backendRevision"`
	TTLMs            uint64    `json:"ttlMs"`
	IssuedAt         time.Time `json:"issuedAt"`
	ExpiresAt        time.Time `json:"expiresAt"`
	// Grant is the lockGrant.v1 JWS; only its owner receives it.
	Grant       string `json:"grant,omitempty"`
	GrantDigest string `json:"grantDigest"`
	// Status is a fresh lockStatus.v1 JWS proof and its expiry.
	Status          string    `json:"status"`
	StatusExpiresAt time.Time `json:"statusExpiresAt"`
	// Replayed: an idempotent acquire returned an earlier grant.
	Replayed bool `json:"replayed,omitempty"`
}

// Resource is the answer of GET /v1/resources/{resource}.
type Resource struct {
	Resource         string `json:"resource"`
	LastFence        uint64 `json:"lastFence"`
	FenceFloor       uint64 `json:"fenceFloor"`
	GlobalFenceFloor uint64 `json:"globalFenceFloor"`
	PolicyGeneration uint64 `json:"policyGeneration"`
	IssuerEpoch      uint64 `json:"issuerEpoch"`
	// Holder is the current or last lease (without its grant).
	Holder *Lease `json:"holder,omitempty"`
}

// FenceFloorBody is the body of POST /v1/admin/fence-floor.
type FenceFloorBody struct {
	// Resource is empty for the global floor.
	Resource string `json:"resource,omitempty"`
	Floor    uint64 `json:"floor"`
}

// Meta is the answer of POST /v1/admin/epoch and GET /v1/admin/meta: the
// registry's global counters.
type Meta struct {
	// IssuerEpoch is the current issuer epoch (starts at 1). Grants of an
	// older epoch are revoked.
	IssuerEpoch uint64 `json:"issuerEpoch"`
	// Revision counts every write to the registry's backend; it is the
	// backendRevision of grants and proofs.
	Revision uint64 `json:"revision"`
	// FenceFloor is the global floor: every fence issued from now on is
	// greater than it.
	FenceFloor uint64 `json:"fenceFloor"`
	// PolicySeq is the last policy generation handed out.
	PolicySeq uint64 `json:"policySeq"`
	// Lineage is the registry's issuer lineage: written once, on the first
	// start of an empty data set, and carried by every grant (the
	// "lineage" claim). A registry restored from a backup has the
	// backup's; a new or replaced one has a new one.
	Lineage string `json:"lineage,omitempty"`
	// Time is the registry's time: the latest time at which any registry
	// process committed a lease decision or a policy change. A registry
	// process decides no earlier than it (within its maxClockSkew), so a
	// Time ahead of a process's clock is how far that clock is behind.
	// Absent before the first such decision.
	Time time.Time `json:"time,omitzero"`
}

// Policy is a per-resource (or per-prefix) policy: the body of PUT
// /v1/admin/policies, the items of GET /v1/admin/policies and the record
// the registry stores (the same JSON in every backend). Generation,
// Deleted and UpdatedAt are set by the registry (a PUT must leave them
// zero): every change gets a new generation from Meta.PolicySeq, and a
// deleted policy stays as a tombstone so generations never go backwards.
type Policy struct {
	// Pattern is an exact resource ID, or a prefix ending in "*"
	// ("invoice-batch/*"). The longest matching pattern applies.
	Pattern string `json:"pattern"`
	// AllowedOwners: exact owners, or prefixes ending in "*". Empty allows all.
	AllowedOwners []string `json:"allowedOwners,omitempty"`
	MinTTLMs      uint64   `json:"minTtlMs,omitempty"`
	MaxTTLMs      uint64   `json:"maxTtlMs,omitempty"`
	// OpClasses lists the allowed operation classes. Empty allows all.
	OpClasses  []string `json:"opClasses,omitempty"`
	Generation uint64   `json:"generation"`
	Deleted    bool     `json:"deleted,omitempty"`
	// UpdatedAt is Unix milliseconds.
	UpdatedAt int64 `json:"updatedAt"`
}

// Receipt is what a worker may learn of a sidecar receipt on the sidecar's
// own API (GET /.fencegate/v1/receipts): everything but the stored
// response, the proof that a segment was accepted.
type Receipt struct {
	ID            string    `json:"id"`
	Resource      string    `json:"resource"`
	Fence         uint64    `json:"fence"`
	Seq           uint64    `json:"seq"`
	OperationID   string    `json:"operationId"`
	PayloadDigest string    `json:"payloadDigest"`
	GrantDigest   string    `json:"grantDigest"`
	BackendStatus int       `json:"backendStatus"`
	AcceptedAt    time.Time `json:"acceptedAt"`
	// Source says how the receipt came to be (forwarded, reconciled ...).
	Source string `json:"source"`
}
