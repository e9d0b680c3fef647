package store

import "fmt"

// MaxTrimPerCommit bounds the receipts one Commit deletes (Change.TrimKeep):
// a resource over its bound by more (a bound just lowered, receipts written
// by a version that did not trim) comes down by this many per Commit, and
// the background compaction takes the rest, so that no Commit pays for a
// backlog.
const MaxTrimPerCommit = 16

// TrimOldest is Tx.TrimReceipts for a backend that knows count, the number
// of receipts rec's resource holds (its receipt just written included): it
// deletes the oldest of them beyond the newest keep, at most
// MaxTrimPerCommit, walking tx.Stamps from the oldest and deleting each with
// tx.DeleteReceipt, and stops early at a receipt compaction must keep (the
// one of a mutation in flight, or one not below the record's last accepted
// segment: never the case for the oldest receipts beyond keep >= 1, which
// are below the newest one, but checked, as PlanCompaction does).
func TrimOldest(tx Tx, rec Record, count, keep int) (int, error) {
	if keep < 1 {
		return 0, fmt.Errorf("store: trim %q: keep %d: %w", rec.Resource, keep, ErrInvalidInput)
	}
	excess := min(count-keep, MaxTrimPerCommit)
	if excess <= 0 {
		return 0, nil
	}
	var drop []ReceiptStamp
	for st, err := range tx.Stamps(rec.Resource) {
		if err != nil {
			return 0, err
		}
		if len(drop) == excess || st.Key.Resource != rec.Resource || !deletable(rec, st.Key) {
			break
		}
		drop = append(drop, st)
	}
	for _, st := range drop {
		if err := tx.DeleteReceipt(st); err != nil {
			return 0, err
		}
	}
	return len(drop), nil
}
