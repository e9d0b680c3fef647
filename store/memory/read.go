package memory

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fencegate/fencegate/store"
)

// Record implements store.Store.
func (s *Store) Record(ctx context.Context, resource string) (store.Record, error) {
	if err := store.ValidateResource(resource); err != nil {
		return store.Record{}, err
	}
	if err := s.lock(ctx); err != nil {
		return store.Record{}, err
	}
	defer s.mu.Unlock()
	r := s.record(resource)
	if !r.Exists() {
		return store.Record{}, fmt.Errorf("store: record %q: %w", resource, store.ErrNotFound)
	}
	return r, nil
}

// Receipt implements store.Store.
func (s *Store) Receipt(ctx context.Context, key store.ReceiptKey) (store.Receipt, error) {
	if err := key.Validate(); err != nil {
		return store.Receipt{}, err
	}
	if err := s.lock(ctx); err != nil {
		return store.Receipt{}, err
	}
	defer s.mu.Unlock()
	r := s.receipt(key)
	if r == nil {
		return store.Receipt{}, fmt.Errorf("store: receipt %q fence %d seq %d: %w", key.Resource, key.Fence, key.Seq, store.ErrNotFound)
	}
	return *r, nil
}

// ReceiptsByOperation implements store.Store.
func (s *Store) ReceiptsByOperation(ctx context.Context, resource, operationID string) ([]store.Receipt, error) {
	if err := store.ValidateResource(resource); err != nil {
		return nil, err
	}
	if err := store.ValidateOperationID(operationID); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	seq, _ := strconv.ParseUint(operationID[strings.LastIndexByte(operationID, '/')+1:], 10, 64)
	var out []store.Receipt
	for _, f := range s.ops[opKey{resource, operationID}] {
		if r := s.receipt(store.ReceiptKey{Resource: resource, Fence: f, Seq: seq}); r != nil {
			out = append(out, *r)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("store: receipts of %q op %s: %w", resource, operationID, store.ErrNotFound)
	}
	return out, nil
}

// ListUnknown implements store.Store.
func (s *Store) ListUnknown(ctx context.Context, now time.Time) ([]store.Mutation, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []store.Mutation
	for res := range s.inFlight {
		if r := s.records[res]; r.InFlight.Unsettled(now) {
			out = append(out, *r.InFlight)
		}
	}
	slices.SortFunc(out, func(a, b store.Mutation) int { return strings.Compare(a.Resource, b.Resource) })
	return out, nil
}

// ListPaused implements store.Store.
func (s *Store) ListPaused(ctx context.Context) ([]store.Record, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []store.Record
	for res := range s.paused {
		out = append(out, s.records[res].Clone())
	}
	slices.SortFunc(out, func(a, b store.Record) int { return strings.Compare(a.Resource, b.Resource) })
	return out, nil
}

// ListQuarantined implements store.Store.
func (s *Store) ListQuarantined(ctx context.Context, resource string) ([]store.Quarantine, error) {
	if resource != "" {
		if err := store.ValidateResource(resource); err != nil {
			return nil, err
		}
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []store.Quarantine
	add := func(byID map[string]store.Quarantine) {
		for _, q := range byID {
			out = append(out, q)
		}
	}
	if resource != "" {
		add(s.quarantine[resource])
	} else {
		for _, byID := range s.quarantine {
			add(byID)
		}
	}
	slices.SortFunc(out, func(a, b store.Quarantine) int {
		if c := strings.Compare(a.Resource, b.Resource); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// Records implements store.Store. It sorts the resources after q.After on
// every call: O(resources) a page, which a memory store can afford.
func (s *Store) Records(ctx context.Context, q store.RecordsQuery) ([]store.Record, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var names []string
	for r := range s.records {
		if r > q.After {
			names = append(names, r)
		}
	}
	slices.Sort(names)
	names = names[:min(len(names), q.Limit)]
	out := make([]store.Record, len(names))
	for i, r := range names {
		out[i] = s.records[r].Clone()
	}
	return out, nil
}
