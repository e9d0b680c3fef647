package txstore

import (
	"slices"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/internal/rollback"
)

// KV is a backend step's JSON access to its keys, which Records read and
// write through.
type KV interface {
	// GetJSON decodes key's value into v (a pointer) as one of the step's
	// reads: the step's own writes first, else a read the commit checks
	// (compared, WATCHed). found is false for an absent key.
	GetJSON(key string, v any) (found bool, err error)
	// PutJSON buffers v, JSON-encoded, as key's value.
	PutJSON(key string, v any) error
}

// Keys names the keys of a backend's records.
type Keys struct {
	Meta                           string
	Resource, Lease, Store, Ledger func(id string) string
}

// Records are the registry.Tx methods of the meta, resource, lease,
// fenced-store and ledger records of one step, over its KV, and what the
// step's commit needs of them. A backend's transaction embeds them.
type Records struct {
	kv   KV
	keys *Keys
	wm   *rollback.Watermark
	// seen is the watermark a meta read must reach (nil: the watermark as
	// it is just before each read).
	seen *rollback.State

	// meta is the meta this step writes (nil if none): the watermark
	// learns it once the transaction committed.
	meta *registry.Meta
	// maxFence is the highest LastFence of the resources this step writes:
	// the state file's ceiling covers it before the commit, the watermark
	// learns it after.
	maxFence uint64
	// ended are the resources of leases this step ends (a lease written
	// in a state other than HELD) and held those of leases it writes HELD
	// (a grant, a renewal): the commit announces the end of each resource
	// ended and not held again by the same step (Ended).
	ended, held map[string]bool
}

// NewRecords returns the records of a step reading and writing through
// kv, its meta reads checked against wm as of seen: the watermark as it
// was before the step's first read, or nil for the watermark as it is
// just before each meta read (rollback.Watermark.Check).
func NewRecords(kv KV, keys *Keys, wm *rollback.Watermark, seen *rollback.State) Records {
	return Records{kv: kv, keys: keys, wm: wm, seen: seen}
}

// getJSON reads a V at key through kv.
func getJSON[V any](kv KV, key string) (V, bool, error) {
	var v V
	found, err := kv.GetJSON(key, &v)
	return v, found, err
}

// CheckedMeta returns the meta this step wrote or else the one read
// returns, checked against the watermark (a meta below it is
// rollback.ErrRolledBack, before any decision is taken on it). The meta
// is returned with read's error too.
func (r *Records) CheckedMeta(read func() (m registry.Meta, found bool, err error)) (registry.Meta, error) {
	if r.meta != nil {
		return *r.meta, nil
	}
	seen := r.wm.Snapshot() // before the read: see rollback.Watermark.Check
	if r.seen != nil {
		seen = *r.seen
	}
	m, found, err := read()
	if err != nil {
		return m, err
	}
	return m, r.wm.Check(seen, m, found)
}

// Meta reads the meta through the step's KV, checked against the
// watermark (CheckedMeta).
func (r *Records) Meta() (registry.Meta, error) {
	return r.CheckedMeta(func() (registry.Meta, bool, error) {
		return getJSON[registry.Meta](r.kv, r.keys.Meta)
	})
}

func (r *Records) PutMeta(m registry.Meta) error {
	if err := r.kv.PutJSON(r.keys.Meta, m); err != nil {
		return err
	}
	r.meta = &m
	return nil
}

// Resource reads a resource; the watermark learns its fence.
func (r *Records) Resource(id string) (registry.ResourceRecord, bool, error) {
	rec, found, err := getJSON[registry.ResourceRecord](r.kv, r.keys.Resource(id))
	if found && err == nil {
		r.wm.SeeFence(rec.LastFence)
	}
	return rec, found, err
}

func (r *Records) PutResource(rec registry.ResourceRecord) error {
	if err := r.kv.PutJSON(r.keys.Resource(rec.Resource), rec); err != nil {
		return err
	}
	r.maxFence = max(r.maxFence, rec.LastFence)
	return nil
}

func (r *Records) Lease(id string) (registry.LeaseRecord, bool, error) {
	return getJSON[registry.LeaseRecord](r.kv, r.keys.Lease(id))
}

func (r *Records) PutLease(l registry.LeaseRecord) error {
	if err := r.kv.PutJSON(r.keys.Lease(l.Lease), l); err != nil {
		return err
	}
	m := &r.ended
	if l.State == fencegate.StateHeld {
		m = &r.held
	}
	if *m == nil {
		*m = map[string]bool{}
	}
	(*m)[l.Resource] = true
	return nil
}

func (r *Records) StoreRecord(store string) (registry.StoreRecord, bool, error) {
	return getJSON[registry.StoreRecord](r.kv, r.keys.Store(store))
}

func (r *Records) PutStoreRecord(rec registry.StoreRecord) error {
	return r.kv.PutJSON(r.keys.Store(rec.Store), rec)
}

func (r *Records) Ledger(store string) ([]fencegate.LedgerEntry, error) {
	l, _, err := getJSON[[]fencegate.LedgerEntry](r.kv, r.keys.Ledger(store))
	return l, err
}

func (r *Records) PutLedger(l registry.LedgerRecord) error {
	return r.kv.PutJSON(r.keys.Ledger(l.Store), l.Entries)
}

// Written is the meta this step writes (nil if none).
func (r *Records) Written() *registry.Meta { return r.meta }

// MaxFence is the highest fence of the resources this step writes.
func (r *Records) MaxFence() uint64 { return r.maxFence }

// Reserve makes the state file's ceiling cover the fences this step
// writes before they can be handed out: call it before the commit.
func (r *Records) Reserve() error { return r.wm.ReserveUpTo(r.maxFence) }

// Committed tells the watermark what the committed step wrote.
func (r *Records) Committed() { r.wm.Wrote(r.meta, r.maxFence) }

// Ended are the resources whose lease this step ends without granting
// them again (an acquire that closes an expired holder grants it), in
// order: the commit announces their end.
func (r *Records) Ended() []string {
	var out []string
	for res := range r.ended {
		if !r.held[res] {
			out = append(out, res)
		}
	}
	slices.Sort(out)
	return out
}
