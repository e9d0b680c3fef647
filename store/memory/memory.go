package memory

import (
	"context"
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

// Store is the in-memory backend. It implements store.Store (the methods
// of store.NewTxBackend over its maps) and store.TxStore.
type Store struct {
	txBackend

	mu      sync.Mutex
	closed  bool
	records map[string]*store.Record
	// receipts holds each receipt in store/codec's binary encoding: a
	// receipt is only kept to be replayed or listed, and as bytes it is
	// one pointer-free allocation the garbage collector never scans (as
	// structs, with a header map and strings, a full retention was some
	// 5 KiB and a dozen objects per receipt on the heap).
	receipts   map[store.ReceiptKey][]byte
	ops        map[opKey][]uint64 // fences holding a receipt for the op ID, ascending
	quarantine map[string]map[string]store.Quarantine
	inFlight   map[string]struct{} // resources with a mutation in flight or unknown
	paused     map[string]struct{} // paused resources
	// byResource lists each resource's receipts in ascending (fence, seq)
	// order, for compaction (compact.go).
	byResource map[string][]fenceSeq
	// ledger is the enforcement ledger by shape.
	ledger map[string]store.Enforcement
	// pins are the trust pins.
	pins []store.TrustedKey
	// generation is the store's generation ID.
	generation string
}

type opKey struct{ resource, operationID string }

// txBackend is the store.Store that store.NewTxBackend makes of a Store,
// embedded so that its methods are the Store's.
type txBackend = store.Store

var (
	_ store.Store   = (*Store)(nil)
	_ store.TxStore = (*Store)(nil)
)

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
	s := &Store{
		generation: gen,
		records:    map[string]*store.Record{},
		receipts:   map[store.ReceiptKey][]byte{},
		ops:        map[opKey][]uint64{},
		quarantine: map[string]map[string]store.Quarantine{},
		inFlight:   map[string]struct{}{},
		paused:     map[string]struct{}{},
	}
	s.txBackend = store.NewTxBackend(s, store.TxOptions{MaxResponseBody: opts.MaxResponseBody})
	return s
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

// Update implements store.TxStore: fn runs under the store's mutex, which
// makes it atomic (the writes of a transaction never fail half-way).
func (s *Store) Update(ctx context.Context, _ string, fn func(store.Tx) error) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	return fn(tx{s})
}

// View implements store.TxStore.
func (s *Store) View(ctx context.Context, fn func(store.Tx) error) error {
	return s.Update(ctx, "", fn)
}

// Generation implements store.Store: the ID chosen at New.
func (s *Store) Generation(ctx context.Context) (string, error) {
	if err := s.lock(ctx); err != nil {
		return "", err
	}
	defer s.mu.Unlock()
	return s.generation, nil
}

// Close implements store.Store.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}
