package httpapi

import (
	"time"

	"github.com/fencegate/fencegate/registry"
)

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
// Integers are exact JSON integers (fence tokens may exceed 2^53: decode
// them into 64-bit integers, not floating point).
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

func leaseBody(res registry.Result, caller string) Lease {
	l := res.View.Lease
	out := Lease{
		Lease:            l.Lease,
		Resource:         l.Resource,
		Owner:            l.Owner,
		RequestID:        l.RequestID,
		OpClass:          l.OpClass,
		State:            res.View.State,
		FenceToken:       l.Fence,
		IssuerEpoch:      l.IssuerEpoch,
		PolicyGeneration: l.PolicyGeneration,
		BackendRevision:  l.Revision,
		TTLMs:            l.TTLMs,
		IssuedAt:         time.UnixMilli(l.IssuedAt).UTC(),
		ExpiresAt:        time.UnixMilli(l.ExpiresAt).UTC(),
		GrantDigest:      l.Digest,
		Status:           string(res.Status),
		StatusExpiresAt:  time.UnixMilli(int64(res.StatusClaims.ExpiresAt)).UTC(),
		Replayed:         res.Existing,
	}
	if caller == l.Owner {
		out.Grant = l.Token
	}
	return out
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
