package pgfence

import (
	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/proxy/inbound"
	"github.com/fencegate/fencegate/store"
)

// Request is one fenced write, as Apply takes it: what the sidecar reads
// from a request's headers, with the caller's identity the service
// established and the payload the write's replays must match.
type Request struct {
	// Resource is the canonical resource ID the grant must name.
	Resource string
	// Caller is the caller's workload identity (a SPIFFE ID from its mTLS
	// certificate, or a trusted mesh header), which the grant must name
	// as its owner.
	Caller string
	// Grant is the lockGrant.v1 JWS (the Fence-Grant header).
	Grant string
	// Status is a lockStatus.v1 proof (the Fence-Status header), for a
	// Fence in proof mode (the default).
	Status string
	// Segment is the segment number (Fence-Segment); 0 is 1.
	Segment uint64
	// Payload identifies the write: a replay of (fence, segment) is
	// answered from its receipt only when its payload is the same, and a
	// different payload is a SEGMENT_CONFLICT. Apply binds its SHA-256;
	// PayloadDigest, when set, is used instead (Digest makes the
	// sidecar's, over method, target and body).
	Payload       []byte
	PayloadDigest string
	// Response is what the receipt stores for replays (status 0: 200).
	Response store.StoredResponse
}

// Digest is the payload digest the sidecar binds a request with: SHA-256
// over its method, target (path and query) and body. A service that moves
// from the sidecar to library mode keeps its replays with it.
func Digest(method, target string, body []byte) string {
	return inbound.PayloadDigest(method, target, body)
}

func (r Request) seq() uint64 {
	if r.Segment == 0 {
		return 1
	}
	return r.Segment
}

func (r Request) payload() string {
	if r.PayloadDigest != "" {
		return r.PayloadDigest
	}
	return fencegate.Digest(r.Payload)
}
