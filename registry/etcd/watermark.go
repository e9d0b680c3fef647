package etcd

import (
	"errors"
	"fmt"
	"sync"

	"github.com/fencegate/fencegate/registry"
)

// ErrRolledBack is returned (with registry.ErrBackend) when a step read a
// meta older than one this process had already seen: etcd restored from
// an older snapshot, or emptied. Nothing is decided on it.
var ErrRolledBack = errors.New("registry/etcd: the registry's state went back")

// watermark is the highest meta this process has read or written: the
// registry's own revision and issuer epoch. etcd itself never goes back
// (every member applies one log; a read is linearizable), so a meta
// below the watermark proves a rollback from outside: a snapshot restore
// (with or without --bump-revision, which raises etcd's revision but not
// the registry's) or a wiped data directory.
type watermark struct {
	mu       sync.Mutex
	revision uint64
	epoch    uint64
}

// mark is a watermark's value at one moment.
type mark struct{ revision, epoch uint64 }

// snapshot is taken before a step's first read: what the process had
// seen before the read was sent is what the read must not be below (a
// meta seen by a concurrent view after it may be newer).
func (w *watermark) snapshot() mark {
	w.mu.Lock()
	defer w.mu.Unlock()
	return mark{w.revision, w.epoch}
}

// see raises the watermark to m.
func (w *watermark) see(m registry.Meta) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.revision = max(w.revision, m.Revision)
	w.epoch = max(w.epoch, m.IssuerEpoch)
}

// check compares a meta read (found: it exists) with the snapshot taken
// before the read, and raises the watermark.
func (w *watermark) check(seen mark, m registry.Meta, found bool) error {
	if (!found && (seen.revision > 0 || seen.epoch > 0)) || m.Revision < seen.revision || m.IssuerEpoch < seen.epoch {
		return fmt.Errorf("%w: %w: read revision %d epoch %d, this process saw revision %d epoch %d",
			registry.ErrBackend, ErrRolledBack, m.Revision, m.IssuerEpoch, seen.revision, seen.epoch)
	}
	w.see(m)
	return nil
}
