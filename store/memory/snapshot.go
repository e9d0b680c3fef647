package memory

import (
	"maps"
	"slices"

	"github.com/fencegate/fencegate/store"
)

// Snapshot is a copy of a memory store's whole state: records, receipts,
// quarantine entries, the enforcement ledger, the trust pins and the
// generation. It shares nothing with the store it was taken from.
//
// Snapshot and Restore exist for the deterministic simulation (package
// sim), which models a fenced store put back to an older state under
// running sidecars: a Redis restarted from an older RDB, a volume restored
// from a backup. Nothing in a sidecar takes or restores snapshots.
type Snapshot struct {
	records    map[string]*store.Record
	receipts   map[store.ReceiptKey][]byte
	ops        map[opKey][]uint64
	quarantine map[string]map[string]store.Quarantine
	inFlight   map[string]struct{}
	paused     map[string]struct{}
	byResource map[string][]fenceSeq
	ledger     map[string]store.Enforcement
	pins       []store.TrustedKey
	generation string
}

// Snapshot returns a copy of the store's state now.
func (s *Store) Snapshot() *Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.copyState()
}

// Restore replaces the store's whole state by snap (a copy of it: snap can
// be restored again). Whatever was written since snap was taken is gone,
// as after a restore from a backup.
func (s *Store) Restore(snap *Snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := snap.clone()
	s.records, s.receipts, s.ops, s.quarantine = c.records, c.receipts, c.ops, c.quarantine
	s.inFlight, s.paused, s.byResource, s.ledger = c.inFlight, c.paused, c.byResource, c.ledger
	s.pins, s.generation = c.pins, c.generation
}

func (s *Store) copyState() *Snapshot {
	return (&Snapshot{records: s.records, receipts: s.receipts, ops: s.ops, quarantine: s.quarantine,
		inFlight: s.inFlight, paused: s.paused, byResource: s.byResource, ledger: s.ledger,
		pins: s.pins, generation: s.generation}).clone()
}

// clone is a deep copy of snap.
func (snap *Snapshot) clone() *Snapshot {
	c := &Snapshot{
		records:    make(map[string]*store.Record, len(snap.records)),
		receipts:   make(map[store.ReceiptKey][]byte, len(snap.receipts)),
		ops:        make(map[opKey][]uint64, len(snap.ops)),
		quarantine: make(map[string]map[string]store.Quarantine, len(snap.quarantine)),
		inFlight:   maps.Clone(snap.inFlight),
		paused:     maps.Clone(snap.paused),
		byResource: make(map[string][]fenceSeq, len(snap.byResource)),
		ledger:     make(map[string]store.Enforcement, len(snap.ledger)),
		pins:       slices.Clone(snap.pins),
		generation: snap.generation,
	}
	if c.inFlight == nil {
		c.inFlight = map[string]struct{}{}
	}
	if c.paused == nil {
		c.paused = map[string]struct{}{}
	}
	for k, r := range snap.records {
		rc := r.Clone()
		c.records[k] = &rc
	}
	// A receipt's bytes are never modified once stored (PutReceipt
	// stores a new encoding), so the copies share them.
	maps.Copy(c.receipts, snap.receipts)
	for k, v := range snap.ops {
		c.ops[k] = slices.Clone(v)
	}
	for k, byID := range snap.quarantine {
		c.quarantine[k] = maps.Clone(byID)
	}
	for k, v := range snap.byResource {
		c.byResource[k] = slices.Clone(v)
	}
	for k, e := range snap.ledger {
		c.ledger[k] = e.Clone()
	}
	return c
}
