package memory

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/codec"
)

// tx is a store.Tx over the store's maps; the store's mutex is held. Reads
// return the stored values themselves (store.Tx allows it: the caller
// copies what it keeps); writes store deep copies.
type tx struct{ s *Store }

func (t tx) Load(resource string, key *store.ReceiptKey) (store.Record, *store.Receipt, error) {
	var rec store.Record
	if r := t.s.records[resource]; r != nil {
		rec = *r
	}
	if key == nil {
		return rec, nil, nil
	}
	rc, err := t.s.receipt(*key)
	return rec, rc, err
}

// Now is zero: a memory store decides at the caller's time.
func (tx) Now() (time.Time, error) { return time.Time{}, nil }

func (t tx) PutRecord(r store.Record) error {
	r = r.Clone()
	t.s.records[r.Resource] = &r
	setIndex(t.s.inFlight, r.Resource, r.InFlight != nil)
	setIndex(t.s.paused, r.Resource, r.Pause != nil)
	return nil
}

func (t tx) PutReceipt(r store.Receipt) error {
	t.s.receipts[r.Key()] = codec.EncodeReceipt(nil, r)
	k := opKey{r.Resource, r.OperationID}
	fences := t.s.ops[k]
	if i, found := slices.BinarySearch(fences, r.Fence); !found {
		t.s.ops[k] = slices.Insert(fences, i, r.Fence)
	}
	t.s.indexReceipt(r.Key())
	return nil
}

func (t tx) Quarantine(resource, id string) (*store.Quarantine, error) {
	if q, ok := t.s.quarantine[resource][id]; ok {
		return &q, nil
	}
	return nil, nil
}

func (t tx) PutQuarantine(q store.Quarantine) error {
	byID := t.s.quarantine[q.Resource]
	if byID == nil {
		byID = map[string]store.Quarantine{}
		t.s.quarantine[q.Resource] = byID
	}
	byID[q.ID] = q
	return nil
}

func (t tx) Enforcement(shape string) (*store.Enforcement, error) {
	if e, ok := t.s.ledger[shape]; ok {
		return &e, nil
	}
	return nil, nil
}

func (t tx) PutEnforcement(e store.Enforcement) error {
	if t.s.ledger == nil {
		t.s.ledger = map[string]store.Enforcement{}
	}
	t.s.ledger[e.Shape] = e.Clone()
	return nil
}

func (t tx) Enforcements() ([]store.Enforcement, error) {
	out := make([]store.Enforcement, 0, len(t.s.ledger))
	for _, e := range t.s.ledger {
		out = append(out, e)
	}
	return out, nil
}

func (t tx) TrustedKeys() ([]store.TrustedKey, error) { return t.s.pins, nil }

func (t tx) PutTrustedKeys(pins []store.TrustedKey) error {
	t.s.pins = slices.Clone(pins)
	return nil
}

func (t tx) Receipts(keys []store.ReceiptKey) ([]*store.Receipt, error) {
	out := make([]*store.Receipt, len(keys))
	for i, k := range keys {
		rc, err := t.s.receipt(k)
		if err != nil {
			return nil, err
		}
		out[i] = rc
	}
	return out, nil
}

func (t tx) OperationFences(resource, operationID string) ([]uint64, error) {
	return slices.Clone(t.s.ops[opKey{resource, operationID}]), nil
}

func (t tx) Indexed(index store.Index) ([]store.Record, error) {
	set := t.s.inFlight
	if index == store.IndexPaused {
		set = t.s.paused
	}
	out := make([]store.Record, 0, len(set))
	for res := range set {
		out = append(out, *t.s.records[res])
	}
	slices.SortFunc(out, func(a, b store.Record) int { return strings.Compare(a.Resource, b.Resource) })
	return out, nil
}

// RecordsAfter sorts the resources after after on every call:
// O(resources) a page, which a memory store can afford.
func (t tx) RecordsAfter(after string, limit int) ([]store.Record, error) {
	var names []string
	for r := range t.s.records {
		if r > after {
			names = append(names, r)
		}
	}
	slices.Sort(names)
	names = names[:min(len(names), limit)]
	out := make([]store.Record, len(names))
	for i, r := range names {
		out[i] = *t.s.records[r]
	}
	return out, nil
}

func (t tx) Quarantined(resource string) ([]store.Quarantine, error) {
	var out []store.Quarantine
	for res, byID := range t.s.quarantine {
		if resource != "" && res != resource {
			continue
		}
		for _, q := range byID {
			out = append(out, q)
		}
	}
	return out, nil
}

func setIndex(index map[string]struct{}, resource string, present bool) {
	if present {
		index[resource] = struct{}{}
	} else {
		delete(index, resource)
	}
}

// receipt decodes the stored receipt of k (nil when none).
func (s *Store) receipt(k store.ReceiptKey) (*store.Receipt, error) {
	b, ok := s.receipts[k]
	if !ok {
		return nil, nil
	}
	rc, err := codec.DecodeReceipt(b)
	if err != nil {
		return nil, fmt.Errorf("store: memory: receipt %v: %w", k, err)
	}
	return &rc, nil
}
