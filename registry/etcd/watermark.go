package etcd

import (
	"github.com/fencegate/fencegate/registry/internal/rollback"
)

// ErrRolledBack marks a step that read a meta older than one this process
// had already seen (etcd restored from an older snapshot, or emptied)
// right after the process recovered from a rollback: the state keeps
// going back under it, so the step fails (with registry.ErrBackend) and
// nothing is decided. A first rollback is not an error: the Store
// recovers (recover.go) and runs the step again. It is the shared
// rollback.ErrRolledBack of registry/redis too.
var ErrRolledBack = rollback.ErrRolledBack

// DefaultFenceReserve is how far above the highest fence issued a Store
// with a StateFile reserves its fence ceiling (Options.FenceReserve).
const DefaultFenceReserve = rollback.DefaultFenceReserve

// The watermark (Store.wm, registry/internal/rollback) is the highest
// meta this process has read or written, the registry's own revision,
// issuer epoch and policy generation, and the highest fence it read or
// wrote. etcd itself never goes back (every member applies one log; a read
// is linearizable), so a meta below the watermark proves a rollback from
// outside: a snapshot restore (with or without --bump-revision, which
// raises etcd's revision but not the registry's) or a wiped data
// directory. Unlike registry/redis's no replica announces its writes to
// the others: a replica's next linearizable read sees them.
