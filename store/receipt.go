package store

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"time"
)

// ReceiptSource says which transition wrote a receipt.
type ReceiptSource string

// Receipt sources.
const (
	// SourceCommit: written by Commit with the backend's answer.
	SourceCommit ReceiptSource = "COMMIT"
	// SourceReconciled: written by Resolve (reconciliation).
	SourceReconciled ReceiptSource = "RECONCILED"
)

// ReceiptKey addresses a receipt: one accepted segment of a resource.
type ReceiptKey struct {
	// Resource is the canonical resource ID.
	Resource string
	// Fence is the fence the segment was accepted under.
	Fence uint64
	// Seq is the segment sequence number.
	Seq uint64
}

// StoredResponse is the bounded response replayed for a repeated segment.
type StoredResponse struct {
	// Status is the HTTP status replayed to clients.
	Status int `json:"status"`
	// Header holds the selected response headers (http.Header compatible).
	Header map[string][]string `json:"header,omitempty"`
	// Body is the response body, cut at the store's configured limit.
	Body []byte `json:"body,omitempty"`
	// Truncated is set when Body was cut.
	Truncated bool `json:"truncated,omitempty"`
}

// Clone returns a deep copy of r.
func (r StoredResponse) Clone() StoredResponse {
	if r.Header != nil {
		h := make(map[string][]string, len(r.Header))
		for k, v := range r.Header {
			h[k] = append([]string(nil), v...)
		}
		r.Header = h
	}
	if r.Body != nil {
		r.Body = append([]byte(nil), r.Body...)
	}
	return r
}

// bounded returns a copy of r whose body is cut at limit bytes.
func (r StoredResponse) bounded(limit int) StoredResponse {
	r = r.Clone()
	if len(r.Body) > limit {
		r.Body = r.Body[:limit:limit]
		r.Truncated = true
	}
	if len(r.Body) == 0 {
		r.Body = nil
	}
	if len(r.Header) == 0 {
		r.Header = nil
	}
	return r
}

// Receipt is stored per accepted segment.
type Receipt struct {
	// ID is derived from the receipt's identity (see ReceiptID).
	ID string `json:"id"`
	OpRef
	// OperationID is Root + "/" + Seq.
	OperationID string `json:"operationId"`
	// PayloadDigest is the digest of the accepted request (method, target, body).
	PayloadDigest string `json:"payloadDigest"`
	// GrantDigest is the digest of the grant the request carried.
	GrantDigest string `json:"grantDigest"`
	// Owner is the workload identity that began the mutation
	// (BeginInput.Owner), carried through the in-flight marker. A receipt
	// stored before owners were kept reads back "": it belongs to no worker.
	Owner string `json:"owner,omitempty"`
	// BackendStatus is the backend's HTTP status; 0 when reconciliation
	// wrote the receipt without a backend answer.
	BackendStatus int `json:"backendStatus"`
	// Response is what a replay returns.
	Response StoredResponse `json:"response"`
	// AcceptedAt is the Now of the Commit or Resolve that wrote it.
	AcceptedAt time.Time `json:"acceptedAt"`
	// Source is COMMIT or RECONCILED.
	Source ReceiptSource `json:"source"`
}

// Key returns the receipt's key.
func (r Receipt) Key() ReceiptKey {
	return ReceiptKey{Resource: r.Resource, Fence: r.Fence, Seq: r.Seq}
}

// Clone returns a deep copy of r.
func (r Receipt) Clone() Receipt {
	r.Response = r.Response.Clone()
	return r
}

// ReceiptID returns the deterministic ID of the receipt of a segment:
// "rcpt-" + 32 hex digits of SHA-256 over its identity and payload digest.
func ReceiptID(ref OpRef, payloadDigest string) string {
	return "rcpt-" + idHash(ref, payloadDigest)
}

func idHash(ref OpRef, extra string) string {
	h := sha256.New()
	var n [8]byte
	for _, s := range []string{ref.Resource, ref.Root, extra} {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	binary.BigEndian.PutUint64(n[:], ref.Fence)
	h.Write(n[:])
	binary.BigEndian.PutUint64(n[:], ref.Seq)
	h.Write(n[:])
	return hex.EncodeToString(h.Sum(nil)[:16])
}

func newReceipt(m *Mutation, status int, resp StoredResponse, now time.Time, src ReceiptSource, limit int) Receipt {
	return Receipt{
		ID:            ReceiptID(m.OpRef, m.PayloadDigest),
		OpRef:         m.OpRef,
		OperationID:   m.OperationID,
		PayloadDigest: m.PayloadDigest,
		GrantDigest:   m.GrantDigest,
		Owner:         m.Owner,
		BackendStatus: status,
		Response:      resp.bounded(limit),
		AcceptedAt:    normTime(now),
		Source:        src,
	}
}
