package memory

import (
	"context"
	"slices"
	"sync"

	"github.com/fencegate/fencegate/store"
)

// Options configures a memory store.
type Options struct {
	// MaxResponseBody is the stored response body limit (see store.BodyLimit).
	MaxResponseBody int
	// Generation is the store's generation (store.ValidateGeneration); a
	// new random one (store.NewGeneration) when empty. A deterministic
	// simulation sets it.
	Generation string
}

// Store is the in-memory backend. It implements store.Store.
type Store struct {
	mu         sync.Mutex
	closed     bool
	bodyLimit  int
	records    map[string]*store.Record
	receipts   map[store.ReceiptKey]*store.Receipt
	ops        map[opKey][]uint64 // fences holding a receipt for the op ID, ascending
	quarantine map[string]map[string]store.Quarantine
	inFlight   map[string]struct{} // resources with a mutation in flight or unknown
	paused     map[string]struct{} // paused resources

	// byResource lists each resource's receipts in ascending (fence, seq)
	// order, for compaction (compact.go).
	byResource map[string][]fenceSeq
	// ledger is the enforcement ledger by shape (enforcement.go).
	ledger map[string]store.Enforcement
	// pins are the trust pins (trust.go).
	pins []store.TrustedKey
	// generation is the store's generation ID.
	generation string
}

type opKey struct{ resource, operationID string }

var _ store.Store = (*Store)(nil)

// New returns an empty memory store. It panics on an invalid
// Options.Generation (a programming error).
func New(opts Options) *Store {
	gen := opts.Generation
	if gen == "" {
		gen = store.NewGeneration()
	}
	if err := store.ValidateGeneration(gen); err != nil {
		panic("store/memory: " + err.Error())
	}
	return &Store{
		generation: gen,
		bodyLimit:  store.BodyLimit(opts.MaxResponseBody),
		records:    map[string]*store.Record{},
		receipts:   map[store.ReceiptKey]*store.Receipt{},
		ops:        map[opKey][]uint64{},
		quarantine: map[string]map[string]store.Quarantine{},
		inFlight:   map[string]struct{}{},
		paused:     map[string]struct{}{},
	}
}

// lock takes the mutex unless ctx is done or the store closed.
func (s *Store) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return store.ErrClosed
	}
	return nil
}

func (s *Store) record(resource string) store.Record {
	if r := s.records[resource]; r != nil {
		return r.Clone()
	}
	return store.Record{}
}

// peek returns the stored record without copying; the pure functions of
// package store never modify their inputs.
func (s *Store) peek(resource string) store.Record {
	if r := s.records[resource]; r != nil {
		return *r
	}
	return store.Record{}
}

func (s *Store) receipt(k store.ReceiptKey) *store.Receipt {
	if r := s.receipts[k]; r != nil {
		c := r.Clone()
		return &c
	}
	return nil
}

// apply writes a change; it returns the quarantine entry as stored.
func (s *Store) apply(ch store.Change) *store.Quarantine {
	if ch.WriteRecord {
		r := ch.Record // fresh: a Change shares nothing with its inputs
		s.records[r.Resource] = &r
		setIndex(s.inFlight, r.Resource, r.InFlight != nil)
		setIndex(s.paused, r.Resource, r.Pause != nil)
	}
	if ch.WriteReceipt {
		r := ch.Receipt
		s.receipts[r.Key()] = r
		k := opKey{r.Resource, r.OperationID}
		fences := s.ops[k]
		if i, found := slices.BinarySearch(fences, r.Fence); !found {
			s.ops[k] = slices.Insert(fences, i, r.Fence)
		}
		s.indexReceipt(r.Key())
	}
	if ch.Quarantine == nil {
		return nil
	}
	q := *ch.Quarantine
	byID := s.quarantine[q.Resource]
	if byID == nil {
		byID = map[string]store.Quarantine{}
		s.quarantine[q.Resource] = byID
	}
	if prev, ok := byID[q.ID]; ok {
		q = q.Merge(prev)
	}
	byID[q.ID] = q
	return &q
}

func setIndex(index map[string]struct{}, resource string, present bool) {
	if present {
		index[resource] = struct{}{}
	} else {
		delete(index, resource)
	}
}

// Close implements store.Store.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}
