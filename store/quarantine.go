package store

import "time"

// Quarantine records an attempt to send an accepted (fence, seq) again with
// another payload. The attempt is never let through: every repeat of it is
// SEGMENT_CONFLICT again and bumps Attempts.
type Quarantine struct {
	// ID is derived from the attempt (see QuarantineID).
	ID string `json:"id"`
	OpRef
	// OperationID is Root + "/" + Seq of the attempt.
	OperationID string `json:"operationId"`
	// PayloadDigest is the rejected payload's digest.
	PayloadDigest string `json:"payloadDigest"`
	// AcceptedPayloadDigest is the payload digest of the stored receipt.
	AcceptedPayloadDigest string `json:"acceptedPayloadDigest"`
	// ReceiptID is the stored receipt the attempt conflicts with.
	ReceiptID string `json:"receiptId"`
	// GrantDigest is the grant the attempt carried.
	GrantDigest string `json:"grantDigest"`
	// FirstSeen and LastSeen bracket the attempts.
	FirstSeen time.Time `json:"firstSeen"`
	// LastSeen is the Now of the latest attempt.
	LastSeen time.Time `json:"lastSeen"`
	// Attempts counts the conflicting attempts seen.
	Attempts uint64 `json:"attempts"`
}

// QuarantineID returns the deterministic ID of a conflicting attempt:
// "qrnt-" + 32 hex digits of SHA-256 over its identity and payload digest.
func QuarantineID(ref OpRef, payloadDigest string) string {
	return "qrnt-" + idHash(ref, "q:"+payloadDigest)
}

// Merge folds an earlier stored entry with the same ID into q: the first
// sighting is kept and the attempts add up.
func (q Quarantine) Merge(prev Quarantine) Quarantine {
	if prev.ID != q.ID {
		return q
	}
	q.FirstSeen = prev.FirstSeen
	q.Attempts += prev.Attempts
	return q
}
