package store

import (
	"fmt"
	"time"
)

// CommitInput carries the backend's answer to the mutation in flight.
type CommitInput struct {
	OpRef
	// BackendStatus is the backend's HTTP status (100..599).
	BackendStatus int
	// Response is stored for replays; a zero Response.Status means
	// BackendStatus. The body is cut at the store's configured limit.
	Response StoredResponse
	// Now is the caller's current time; it becomes the receipt's AcceptedAt.
	Now time.Time
	// KeepReceipts, when above 0, is retention's bound on the receipts a
	// resource keeps (retention.maxPerResource): a Commit that takes the
	// resource over it deletes its oldest receipts beyond the newest
	// KeepReceipts in the same transaction (Change.TrimKeep, Tx.TrimReceipts),
	// so the background compaction only ages receipts out. 0 trims nothing.
	KeepReceipts int
}

// DecideCommit is Commit as a pure function. rec is the stored record and
// existing the receipt stored for (fence, seq), or nil. When the marker in
// flight (or unknown) matches in, the change writes the receipt, advances
// LastSeq and clears the marker. When it does not but a receipt with the same
// root exists, the commit already happened: the change writes nothing and
// carries that receipt. Otherwise ErrNotInFlight. bodyLimit is the configured
// response body limit (see BodyLimit).
func DecideCommit(rec Record, existing *Receipt, in CommitInput, bodyLimit int) (Change, error) {
	if err := in.Validate(); err != nil {
		return Change{}, err
	}
	resp := in.Response
	if resp.Status == 0 {
		resp.Status = in.BackendStatus
	}
	ch, err := settleApplied(rec, existing, in.OpRef, in.BackendStatus, resp, in.Now, SourceCommit, BodyLimit(bodyLimit), "commit")
	if err == nil && ch.WriteReceipt {
		ch.TrimKeep = in.KeepReceipts
	}
	return ch, err
}

// settleApplied writes the receipt of the matching marker and advances the
// segment, or recognises an earlier settlement.
func settleApplied(rec Record, existing *Receipt, ref OpRef, status int, resp StoredResponse, now time.Time, src ReceiptSource, limit int, op string) (Change, error) {
	m := rec.InFlight
	if !m.matches(ref) {
		if existing != nil && existing.Root == ref.Root {
			r := existing.Clone()
			return Change{Receipt: &r}, nil
		}
		return Change{}, fmt.Errorf("store: %s %s of %q: %w", op, ref.OperationID(), ref.Resource, ErrNotInFlight)
	}
	if existing != nil || m.Fence != rec.HighestFence || m.Seq != rec.LastSeq+1 {
		return Change{}, fmt.Errorf("store: %s %s of %q: marker inconsistent with record (highest %d, lastSeq %d): %w",
			op, ref.OperationID(), ref.Resource, rec.HighestFence, rec.LastSeq, ErrCorrupt)
	}
	r := newReceipt(m, status, resp, now, src, limit)
	next := rec.Clone()
	next.InFlight = nil
	next.LastSeq = m.Seq
	rr := r
	return Change{Record: next, WriteRecord: true, Receipt: &rr, WriteReceipt: true}, nil
}
