package store

import (
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxCompactDeletes is the largest CompactInput.MaxDeletes accepted.
const MaxCompactDeletes = 100_000

// CompactInput sets the retention of receipts and quarantine entries. A zero
// MaxAge or MaxPerResource disables that limit; at least one must be set.
type CompactInput struct {
	// Now is the caller's current time.
	Now time.Time
	// MaxAge deletes receipts accepted (AcceptedAt), and quarantine entries
	// last seen (LastSeen), more than MaxAge before Now.
	MaxAge time.Duration
	// MaxPerResource deletes a resource's receipts beyond its newest
	// MaxPerResource (by fence, then seq), and its quarantine entries beyond
	// the newest MaxPerResource (by LastSeen).
	MaxPerResource int
	// MaxDeletes bounds the deletions of one call (1..MaxCompactDeletes), so
	// that its transaction stays small; CompactResult.More says call again.
	MaxDeletes int
}

// Validate checks a compaction input.
func (in CompactInput) Validate() error {
	if err := checkNow(in.Now); err != nil {
		return err
	}
	if in.MaxAge < 0 {
		return invalid("maxAge", "must be >= 0")
	}
	if in.MaxPerResource < 0 {
		return invalid("maxPerResource", "must be >= 0")
	}
	if in.MaxAge == 0 && in.MaxPerResource == 0 {
		return invalid("maxAge", "maxAge or maxPerResource required")
	}
	if in.MaxDeletes < 1 || in.MaxDeletes > MaxCompactDeletes {
		return invalid("maxDeletes", "must be in 1.."+strconv.Itoa(MaxCompactDeletes))
	}
	return nil
}

// expired reports whether t is more than MaxAge before Now.
func (in CompactInput) expired(t time.Time) bool {
	return in.MaxAge > 0 && t.Before(in.Now.Add(-in.MaxAge))
}

// CompactResult is what one Compact call deleted.
type CompactResult struct {
	// Receipts is the number of receipts deleted.
	Receipts int
	// Quarantine is the number of quarantine entries deleted.
	Quarantine int
	// More is set when the call stopped at MaxDeletes with more to delete.
	More bool
}

// Stats is the size of a store, for a store-size metric.
type Stats struct {
	// Resources is the number of resource records.
	Resources int
	// Receipts is the number of stored receipts.
	Receipts int
	// Quarantined is the number of quarantine entries.
	Quarantined int
	// Bytes is the storage used: the file size for bolt, an estimate of the
	// heap held for memory (see each backend).
	Bytes int64
}

// ReceiptStamp is what compaction reads of a stored receipt.
type ReceiptStamp struct {
	// Key addresses the receipt.
	Key ReceiptKey
	// OperationID is the receipt's operation ID (for its index entry).
	OperationID string
	// AcceptedAt is the receipt's AcceptedAt.
	AcceptedAt time.Time
}

// Stamp returns the receipt's stamp.
func (r Receipt) Stamp() ReceiptStamp {
	return ReceiptStamp{Key: r.Key(), OperationID: r.OperationID, AcceptedAt: r.AcceptedAt}
}

// CompactPlan is what compaction deletes from one resource, in one atomic
// step with the read of its record.
type CompactPlan struct {
	// Receipts are the receipts to delete, with their operation-ID index
	// entries.
	Receipts []ReceiptStamp
	// Quarantine are the IDs of the quarantine entries to delete.
	Quarantine []string
	// More is set when the budget ran out with more to delete.
	More bool
}

// Deletes returns the number of deletions in the plan.
func (p CompactPlan) Deletes() int { return len(p.Receipts) + len(p.Quarantine) }

// PlanCompaction is Compact's decision for one resource, a pure function
// shared by every backend. rec is the resource's stored record (the zero
// Record if none); total is the number of its stored receipts and receipts
// yields them in ascending (fence, seq) order (PlanCompaction stops pulling
// when it is done, after at most budget+1 of them); quarantine holds all its
// quarantine entries, in any order. budget bounds the deletions.
//
// Receipts are walked from the oldest: one is deleted while it is beyond the
// newest MaxPerResource or accepted more than MaxAge ago, and the walk stops
// at the first receipt kept, so its cost is bounded by what it deletes.
// (AcceptedAt is the writer's clock: a receipt behind a younger one waits for
// it.) Only a receipt of a fence below HighestFence, or of HighestFence and a
// seq below LastSeq, is ever deleted: the receipt of the last accepted
// segment and that of the mutation in flight or unknown are kept whatever
// the limits, and the record is never touched. The package comment explains
// why a deleted segment can never be accepted again.
func PlanCompaction(rec Record, total int, receipts iter.Seq2[ReceiptStamp, error], quarantine []Quarantine, in CompactInput, budget int) (CompactPlan, error) {
	if err := in.Validate(); err != nil {
		return CompactPlan{}, err
	}
	var plan CompactPlan
	if budget <= 0 {
		return plan, nil
	}
	if total > 0 {
		if !rec.Exists() {
			return CompactPlan{}, fmt.Errorf("store: compact: %d receipts without a record: %w", total, ErrCorrupt)
		}
		i := 0
		for st, err := range receipts {
			if err != nil {
				return CompactPlan{}, err
			}
			if st.Key.Resource != rec.Resource {
				return CompactPlan{}, fmt.Errorf("store: compact: receipt %v listed for %q: %w", st.Key, rec.Resource, ErrCorrupt)
			}
			excess := in.MaxPerResource > 0 && i < total-in.MaxPerResource
			if !deletable(rec, st.Key) || !(excess || in.expired(st.AcceptedAt)) {
				break
			}
			if len(plan.Receipts) == budget {
				plan.More = true
				return plan, nil
			}
			plan.Receipts = append(plan.Receipts, st)
			i++
		}
	}

	qs := slices.Clone(quarantine)
	// Newest first: the first MaxPerResource are within the count limit.
	slices.SortFunc(qs, func(a, b Quarantine) int {
		if c := b.LastSeen.Compare(a.LastSeen); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	var drop []Quarantine
	for i, q := range qs {
		if rec.Exists() && q.Resource != rec.Resource {
			return CompactPlan{}, fmt.Errorf("store: compact: quarantine %s of %q listed for %q: %w", q.ID, q.Resource, rec.Resource, ErrCorrupt)
		}
		if (in.MaxPerResource > 0 && i >= in.MaxPerResource) || in.expired(q.LastSeen) {
			drop = append(drop, q)
		}
	}
	// Oldest first, up to the budget left.
	slices.Reverse(drop)
	for _, q := range drop {
		if plan.Deletes() == budget {
			plan.More = true
			break
		}
		plan.Quarantine = append(plan.Quarantine, q.ID)
	}
	return plan, nil
}

// deletable reports whether compaction may delete the receipt of k: a fence
// below the highest, or the highest and a seq below the last accepted one,
// and never the segment of the mutation in flight or unknown.
func deletable(rec Record, k ReceiptKey) bool {
	if m := rec.InFlight; m != nil && m.Fence == k.Fence && m.Seq == k.Seq {
		return false
	}
	return k.Fence < rec.HighestFence || (k.Fence == rec.HighestFence && k.Seq < rec.LastSeq)
}
