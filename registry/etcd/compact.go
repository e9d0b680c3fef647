package etcd

import (
	"context"
	"time"

	"github.com/fencegate/fencegate/registry/internal/txstore"
)

// backend is the registry.Backend of OpenBackend: the shared one of
// registry/internal/txstore (the TxStore's backend, plus the Store's
// wake-ups across processes, its state-file flusher and its rollback
// counts), compacting in transactions of at most compactStep deletions.
type backend struct{ txstore.Backend }

// compactStep bounds the leases one compaction transaction deletes: each
// is three deletes (the lease and its two index entries) and one
// comparison, so 256 of them stay within --max-txn-ops 1024 (registry
// batches are 1000: registry.CompactBatch).
const compactStep = 256

// Compact implements registry.Backend: the TxStore backend's compaction,
// in transactions of at most compactStep deletions until limit leases are
// deleted or a transaction finds fewer to delete. It returns how many it
// deleted, with the first error.
func (b backend) Compact(ctx context.Context, endedBefore time.Time, limit int) (int, error) {
	if limit <= compactStep {
		return b.Backend.Compact(ctx, endedBefore, limit)
	}
	n := 0
	for n < limit {
		want := min(compactStep, limit-n)
		k, err := b.Backend.Compact(ctx, endedBefore, want)
		n += k
		if err != nil || k < want {
			return n, err
		}
	}
	return n, nil
}
