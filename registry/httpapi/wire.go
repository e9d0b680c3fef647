package httpapi

import (
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/registry"
)

// The wire types of the registry API are the contract's (fencegate.Lease,
// fencegate.AcquireBody, ...); this file converts the registry's records
// to them.

// leaseBody is the answer about a lease with its status proof; the grant
// goes to its owner only.
func leaseBody(res registry.Result, caller string) fencegate.Lease {
	out := leaseWire(res.View, caller)
	out.Status = string(res.Status)
	out.StatusExpiresAt = time.UnixMilli(int64(res.StatusClaims.ExpiresAt)).UTC()
	out.Replayed = res.Existing
	return out
}

// leaseWire is the wire form of a lease view, without a status proof; the
// grant goes to its owner only.
func leaseWire(v registry.LeaseView, caller string) fencegate.Lease {
	l := v.Lease
	out := fencegate.Lease{
		Lease:            l.Lease,
		Resource:         l.Resource,
		Owner:            l.Owner,
		RequestID:        l.RequestID,
		OpClass:          l.OpClass,
		State:            v.State,
		FenceToken:       l.Fence,
		IssuerEpoch:      l.IssuerEpoch,
		PolicyGeneration: l.PolicyGeneration,
		BackendRevision:  l.Revision,
		TTLMs:            l.TTLMs,
		IssuedAt:         time.UnixMilli(l.IssuedAt).UTC(),
		ExpiresAt:        time.UnixMilli(l.ExpiresAt).UTC(),
		GrantDigest:      l.Digest,
	}
	if caller == l.Owner {
		out.Grant = l.Token
	}
	return out
}

// metaBody is the wire form of the registry's meta record.
func metaBody(m registry.Meta) fencegate.Meta {
	out := fencegate.Meta{IssuerEpoch: m.IssuerEpoch, Revision: m.Revision, FenceFloor: m.FenceFloor, PolicySeq: m.PolicySeq, Lineage: m.Lineage}
	if m.Time > 0 {
		out.Time = time.UnixMilli(m.Time).UTC()
	}
	return out
}
