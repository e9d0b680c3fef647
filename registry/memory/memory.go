package memory

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/registry"
)

// Store is an in-memory registry.TxStore. Transactions are serialized by a
// mutex; an Update's writes are staged and applied only when it succeeds.
type Store struct {
	mu     sync.RWMutex
	closed bool
	data   tables
}

type tables struct {
	meta      registry.Meta
	resources map[string]registry.ResourceRecord
	leases    map[string]registry.LeaseRecord
	requests  map[string]string
	digests   map[string]string
	policies  map[string]fencegate.Policy
	// deleted is staged lease deletions (with their index entries).
	deleted []registry.LeaseRecord
	// The anchors of fenced stores: store records, ledgers, and the
	// anchored progress by anchorKey(store, resource).
	stores  map[string]registry.StoreRecord
	ledgers map[string][]fencegate.LedgerEntry
	anchors map[string]fencegate.Progress
}

// anchorKey is the anchors' key: the store name holds no NUL, so the
// keys of one store are exactly those with its prefix.
func anchorKey(store, resource string) string { return store + "\x00" + resource }

func newTables() tables {
	return tables{
		resources: map[string]registry.ResourceRecord{},
		leases:    map[string]registry.LeaseRecord{},
		requests:  map[string]string{},
		digests:   map[string]string{},
		policies:  map[string]fencegate.Policy{},
		stores:    map[string]registry.StoreRecord{},
		ledgers:   map[string][]fencegate.LedgerEntry{},
		anchors:   map[string]fencegate.Progress{},
	}
}

// New returns an empty store.
func New() *Store { return &Store{data: newTables()} }

// NewBackend returns a registry.Backend over a new empty store.
func NewBackend() registry.Backend { return registry.NewTxBackend(New()) }

// Update runs fn in a read-write transaction.
func (s *Store) Update(_ context.Context, fn func(registry.Tx) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return registry.ErrClosed
	}
	// The stage tables are made at the transaction's first write (put): a
	// transaction that only reads, or refuses, makes none.
	tx := &tx{base: &s.data, stage: tables{meta: s.data.meta}, writable: true}
	if err := fn(tx); err != nil {
		return err
	}
	s.data.meta = tx.stage.meta
	maps.Copy(s.data.resources, tx.stage.resources)
	maps.Copy(s.data.leases, tx.stage.leases)
	maps.Copy(s.data.requests, tx.stage.requests)
	maps.Copy(s.data.digests, tx.stage.digests)
	maps.Copy(s.data.policies, tx.stage.policies)
	maps.Copy(s.data.stores, tx.stage.stores)
	maps.Copy(s.data.ledgers, tx.stage.ledgers)
	maps.Copy(s.data.anchors, tx.stage.anchors)
	for _, l := range tx.stage.deleted {
		delete(s.data.leases, l.Lease)
		delete(s.data.requests, l.Owner+"\x00"+l.RequestID)
		delete(s.data.digests, l.Digest)
	}
	return nil
}

// View runs fn in a read-only transaction.
func (s *Store) View(_ context.Context, fn func(registry.Tx) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return registry.ErrClosed
	}
	// Nothing is staged in a read-only transaction (put refuses), so its
	// stage tables are nil maps, which read as empty.
	tx := &tx{base: &s.data, stage: tables{meta: s.data.meta}}
	return fn(tx)
}

// Snapshot is a copy of a Store's whole state: a backup an operator could
// restore (the simulation restores one to reproduce a registry put back to
// an older state, which forgets the fences issued since).
type Snapshot struct{ data tables }

// clone is a deep copy of committed tables (the records are plain values).
func (t tables) clone() tables {
	return tables{
		meta:      t.meta,
		resources: maps.Clone(t.resources),
		leases:    maps.Clone(t.leases),
		requests:  maps.Clone(t.requests),
		digests:   maps.Clone(t.digests),
		policies:  maps.Clone(t.policies),
		stores:    maps.Clone(t.stores),
		ledgers:   maps.Clone(t.ledgers), // entries are replaced whole, never changed in place
		anchors:   maps.Clone(t.anchors), // progress values are copied in and out (cloneProgress)
	}
}

// Snapshot copies the store's state.
func (s *Store) Snapshot() *Snapshot {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return &Snapshot{data: s.data.clone()}
}

// Restore puts the store back to snap (a copy of it: a snapshot can be
// restored more than once).
func (s *Store) Restore(snap *Snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data = snap.data.clone()
}

// Close makes every later call fail with registry.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

type tx struct {
	base     *tables
	stage    tables
	writable bool
}

func get[V any](stage, base map[string]V, k string) (V, bool, error) {
	if v, ok := stage[k]; ok {
		return v, true, nil
	}
	v, ok := base[k]
	return v, ok, nil
}

func (t *tx) put(fn func()) error {
	if !t.writable {
		return registry.ErrInvalidInput
	}
	if t.stage.resources == nil { // the transaction's first write
		meta := t.stage.meta
		t.stage = newTables()
		t.stage.meta = meta
	}
	fn()
	return nil
}

func (t *tx) Meta() (registry.Meta, error)  { return t.stage.meta, nil }
func (t *tx) PutMeta(m registry.Meta) error { return t.put(func() { t.stage.meta = m }) }
func (t *tx) Resource(id string) (registry.ResourceRecord, bool, error) {
	return get(t.stage.resources, t.base.resources, id)
}
func (t *tx) PutResource(r registry.ResourceRecord) error {
	return t.put(func() { t.stage.resources[r.Resource] = r })
}
func (t *tx) Lease(id string) (registry.LeaseRecord, bool, error) {
	return get(t.stage.leases, t.base.leases, id)
}
func (t *tx) PutLease(l registry.LeaseRecord) error {
	return t.put(func() { t.stage.leases[l.Lease] = l })
}
func (t *tx) LeaseByRequest(owner, req string) (string, bool, error) {
	return get(t.stage.requests, t.base.requests, owner+"\x00"+req)
}
func (t *tx) PutRequest(owner, req, id string) error {
	return t.put(func() { t.stage.requests[owner+"\x00"+req] = id })
}
func (t *tx) LeaseByDigest(d string) (string, bool, error) {
	return get(t.stage.digests, t.base.digests, d)
}
func (t *tx) PutDigest(d, id string) error { return t.put(func() { t.stage.digests[d] = id }) }

// Policies and EachLease go in key order, not map order: the
// deterministic simulation runs a round the same way every time.
func (t *tx) Policies() ([]fencegate.Policy, error) {
	merged := t.base.policies
	if len(t.stage.policies) > 0 { // else no merged copy: every acquire and registration reads them
		merged = maps.Clone(t.base.policies)
		maps.Copy(merged, t.stage.policies)
	}
	out := make([]fencegate.Policy, 0, len(merged))
	for _, k := range slices.Sorted(maps.Keys(merged)) {
		out = append(out, merged[k])
	}
	return out, nil
}
func (t *tx) EachLease(fn func(registry.LeaseRecord) error) error {
	merged := maps.Clone(t.base.leases)
	maps.Copy(merged, t.stage.leases)
	for _, k := range slices.Sorted(maps.Keys(merged)) {
		if err := fn(merged[k]); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) DeleteLease(l registry.LeaseRecord) error {
	return t.put(func() { t.stage.deleted = append(t.stage.deleted, l) })
}

func (t *tx) PutPolicy(p fencegate.Policy) error {
	return t.put(func() { t.stage.policies[p.Pattern] = p })
}

func (t *tx) Lineage() (string, error) { return t.stage.meta.Lineage, nil }

func (t *tx) StoreRecord(store string) (registry.StoreRecord, bool, error) {
	return get(t.stage.stores, t.base.stores, store)
}
func (t *tx) PutStoreRecord(r registry.StoreRecord) error {
	return t.put(func() { t.stage.stores[r.Store] = r })
}

func (t *tx) Ledger(store string) ([]fencegate.LedgerEntry, error) {
	l, _, _ := get(t.stage.ledgers, t.base.ledgers, store)
	return cloneLedger(l), nil
}
func (t *tx) PutLedger(l registry.LedgerRecord) error {
	return t.put(func() { t.stage.ledgers[l.Store] = cloneLedger(l.Entries) })
}

func (t *tx) Anchors(store string, resources []string) (map[string]fencegate.Progress, error) {
	out := make(map[string]fencegate.Progress, len(resources))
	for _, r := range resources {
		if p, ok, _ := get(t.stage.anchors, t.base.anchors, anchorKey(store, r)); ok {
			out[r] = cloneProgress(p)
		}
	}
	return out, nil
}
func (t *tx) PutAnchor(a registry.AnchorRecord) error {
	return t.put(func() { t.stage.anchors[anchorKey(a.Store, a.Resource)] = cloneProgress(a.Progress) })
}

// storeAnchors is the merged anchors of store, by resource.
func (t *tx) storeAnchors(store string) map[string]fencegate.Progress {
	prefix := anchorKey(store, "")
	out := map[string]fencegate.Progress{}
	for _, m := range []map[string]fencegate.Progress{t.base.anchors, t.stage.anchors} {
		for k, p := range m {
			if r, ok := strings.CutPrefix(k, prefix); ok {
				out[r] = p
			}
		}
	}
	return out
}

func (t *tx) AnchorsAfter(store, after string, limit int) ([]fencegate.ResourceAnchor, error) {
	all := t.storeAnchors(store)
	var out []fencegate.ResourceAnchor
	for _, r := range slices.Sorted(maps.Keys(all)) {
		if len(out) == limit {
			break
		}
		if r > after {
			out = append(out, fencegate.ResourceAnchor{Resource: r, Anchored: cloneProgress(all[r])})
		}
	}
	return out, nil
}

// AnchorCount counts the merged anchors of store (storeAnchors) without
// building them: the base's, and the staged ones the base has not.
func (t *tx) AnchorCount(store string) (uint64, error) {
	prefix := anchorKey(store, "")
	var n uint64
	for k := range t.base.anchors {
		if strings.HasPrefix(k, prefix) {
			n++
		}
	}
	for k := range t.stage.anchors {
		if _, inBase := t.base.anchors[k]; !inBase && strings.HasPrefix(k, prefix) {
			n++
		}
	}
	return n, nil
}

func cloneProgress(p fencegate.Progress) fencegate.Progress {
	if p.Pending != nil {
		op := *p.Pending
		p.Pending = &op
	}
	return p
}

func cloneLedger(l []fencegate.LedgerEntry) []fencegate.LedgerEntry {
	if l == nil {
		return nil
	}
	out := make([]fencegate.LedgerEntry, len(l))
	for i, e := range l {
		out[i] = e
		out[i].History = slices.Clone(e.History)
	}
	return out
}

// ListLeases is EachLease: the memory store walks every lease anyway.
func (t *tx) ListLeases(fn func(registry.LeaseRecord) error) error { return t.EachLease(fn) }
