package redis

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/internal/rollback"
)

// DefaultFenceReserve is how far above the highest fence issued a process
// with a StateFile reserves its fence ceiling (Options.FenceReserve).
const DefaultFenceReserve = rollback.DefaultFenceReserve

// errRolledBack is returned by a step whose meta read found the registry's
// state older than this process has already seen: Redis was restored from
// an older copy, failed over to a lagging replica, or restarted empty.
// Update and View recover (see recover.go) and run the step again.
var errRolledBack = rollback.ErrRolledBack

// watermark is what this process has seen of the registry's state, and
// its state file (package registry/internal/rollback: shared with
// registry/etcd), plus what is Redis's own: the announcements over
// pub/sub by which the processes sharing a Redis learn what the others
// wrote (a Redis read is not linearizable across a failover, so the
// others' writes must be heard to be a floor).
type watermark struct {
	rollback.Watermark
}

// watermarkState is the state file's content (JSON).
type watermarkState = rollback.State

// loadWatermark reads file (a missing file is an empty watermark).
func loadWatermark(file string, reserve uint64) (*watermark, error) {
	w := &watermark{}
	if err := w.Load(file, reserve); err != nil {
		return nil, err
	}
	return w, nil
}

// announce is the message a committed write publishes on the state
// channel: "<origin> <revision> <epoch> <policySeq> <maxFence>", with the
// highest fence this process knows of (its own and those announced to it).
func (w *watermark) announce(origin string, m registry.Meta, fence uint64) string {
	return fmt.Sprintf("%s %d %d %d %d", origin, m.Revision, m.IssuerEpoch, m.PolicySeq, max(fence, w.Snapshot().MaxFence))
}

// heard raises the watermark to another process's announcement (see
// announce); a malformed one is ignored (the channel is the registry's
// own, but a message only ever raises a watermark, so a bogus one could
// at worst trigger a needless recovery: an epoch bump and a floor).
func (w *watermark) heard(payload string) {
	f := strings.Fields(payload)
	if len(f) != 5 {
		return
	}
	var n [4]uint64
	for i := range n {
		v, err := strconv.ParseUint(f[i+1], 10, 64)
		if err != nil {
			return
		}
		n[i] = v
	}
	w.Heard(registry.Meta{Revision: n[0], IssuerEpoch: n[1], PolicySeq: n[2]}, n[3])
}
