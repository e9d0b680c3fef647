package bolt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/fencegate/fencegate/internal/boltgroup"

	"github.com/fencegate/fencegate/store"
)

// Grouping selects how concurrent writes share transactions (and fsyncs).
type Grouping int

// Groupings.
const (
	// GroupCommit (the default): all writes that are waiting run in one
	// transaction, without delay (internal/boltgroup).
	GroupCommit Grouping = iota
	// BoltBatch: bbolt's DB.Batch (groups up to MaxBatchSize calls, waits up
	// to MaxBatchDelay, 10ms by default).
	BoltBatch
	// NoGrouping: one transaction per write.
	NoGrouping
)

// Options configures a bolt store.
type Options struct {
	// MaxResponseBody is the stored response body limit (see store.BodyLimit).
	MaxResponseBody int
	// Grouping selects write grouping; GroupCommit by default.
	Grouping Grouping
	// MaxGroup caps the writes per group transaction (GroupCommit and
	// BoltBatch); DefaultMaxGroup when <= 0.
	MaxGroup int
	// MaxBatchDelay is bbolt's MaxBatchDelay for BoltBatch; bbolt's
	// default (10ms) when <= 0.
	MaxBatchDelay time.Duration
	// LockTimeout bounds the wait for the file lock held by another process;
	// DefaultLockTimeout when <= 0.
	LockTimeout time.Duration
	// FileMode is the mode of a newly created file; 0600 when 0.
	FileMode os.FileMode
}

// Defaults for Options.
const (
	DefaultMaxGroup    = 256
	DefaultLockTimeout = 5 * time.Second
)

// Counters are counters since Open.
type Counters struct {
	// Writes counts store calls that ran in a committed write transaction.
	Writes uint64
	// TxCommits counts committed bbolt write transactions. bbolt v1.5.0
	// fdatasyncs twice per commit (data pages, meta page), plus once when
	// the file grows; fsyncs ≈ 2 × TxCommits.
	TxCommits uint64
}

// Store is the bolt backend. It implements store.Store (the methods of
// store.NewTxBackend over its transactions) and store.TxStore.
type Store struct {
	txBackend

	db       *bbolt.DB
	grouping Grouping
	group    *boltgroup.Committer

	mu     sync.RWMutex // writers hold R while in flight; Close takes W
	closed bool

	writes    atomic.Uint64
	txCommits atomic.Uint64
	lastTx    atomic.Uint64
}

// txBackend is the store.Store that store.NewTxBackend makes of a Store,
// embedded so that its methods are the Store's.
type txBackend = store.Store

var (
	_ store.Store   = (*Store)(nil)
	_ store.TxStore = (*Store)(nil)
)

// Open opens (creating if needed) the store file at path.
func Open(path string, opts Options) (*Store, error) {
	if opts.MaxGroup <= 0 {
		opts.MaxGroup = DefaultMaxGroup
	}
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = DefaultLockTimeout
	}
	if opts.FileMode == 0 {
		opts.FileMode = 0o600
	}
	db, err := bbolt.Open(path, opts.FileMode, &bbolt.Options{Timeout: opts.LockTimeout})
	if err != nil {
		return nil, fmt.Errorf("store: bolt: open %s: %w", path, err)
	}
	if err := db.Update(initSchema); err != nil {
		_ = db.Close()
		return nil, err
	}
	db.MaxBatchSize = opts.MaxGroup
	if opts.MaxBatchDelay > 0 {
		db.MaxBatchDelay = opts.MaxBatchDelay
	}
	s := &Store{db: db, grouping: opts.Grouping}
	if opts.Grouping == GroupCommit {
		s.group = boltgroup.New(db, opts.MaxGroup)
	}
	s.txBackend = store.NewTxBackend(s, store.TxOptions{MaxResponseBody: opts.MaxResponseBody})
	return s, nil
}

// Close waits for writes in progress, then closes the file.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.group != nil {
		s.group.Close()
	}
	return s.db.Close()
}

// Counters returns the counters since Open (the store's size is Stats).
func (s *Store) Counters() Counters {
	return Counters{Writes: s.writes.Load(), TxCommits: s.txCommits.Load()}
}

// Path returns the file's path.
func (s *Store) Path() string { return s.db.Path() }

// view runs fn in a read-only transaction.
func (s *Store) view(ctx context.Context, fn func(*bbolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.ErrClosed
	}
	return s.db.View(fn)
}

// write runs fn in a durable write transaction, grouped per Options.
func (s *Store) write(ctx context.Context, fn func(*bbolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.ErrClosed
	}
	counted := func(tx *bbolt.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		id := uint64(tx.ID())
		tx.OnCommit(func() { s.committed(id) })
		return nil
	}
	switch s.grouping {
	case GroupCommit:
		return s.group.Do(counted)
	case BoltBatch:
		return s.db.Batch(counted)
	default:
		return s.db.Update(counted)
	}
}

// committed counts a write and, once per transaction ID, a commit.
func (s *Store) committed(txID uint64) {
	s.writes.Add(1)
	for {
		last := s.lastTx.Load()
		if txID <= last {
			return
		}
		if s.lastTx.CompareAndSwap(last, txID) {
			s.txCommits.Add(1)
			return
		}
	}
}

// errWrites ends the read-only run of an Update at its first write.
var errWrites = errors.New("store: bolt: the transaction writes")

// errWroteNothing ends the write-first run of an Update whose function
// succeeded without writing: it is answered from a read-only run instead,
// so that it costs no fsync.
var errWroteNothing = errors.New("store: bolt: the transaction wrote nothing")

// writeFirst reports whether Update runs op's function in the write
// transaction at once: the operations whose decision writes in the common
// case (Begin's PROCEED, Commit's receipt), where a read-only run first
// would decode, decide and be thrown away on every call. The names are
// those store.NewTxBackend passes (TestWriteFirstOperationNames pins
// them); another name only runs read-only first.
func writeFirst(op string) bool { return op == "begin" || op == "commit" }

// Update implements store.TxStore. fn runs in a read-only transaction
// first, so that a decision to write nothing (a repeated ENFORCE, a
// compaction with nothing due, ...) costs no fsync; at its first write it
// runs again, on the latest state, in a durable write transaction grouped
// per Options.
//
// Begin and Commit (writeFirst) run in the write transaction first
// instead, except under BoltBatch. A run there that writes nothing does
// not commit: one that fails returns its error (after its group
// committed, as any write's), one that succeeds (REPLAY, BUSY, a Commit
// already made) runs again read-only as above, so a decision that writes
// nothing still costs no fsync, only a place in a group.
func (s *Store) Update(ctx context.Context, op string, fn func(store.Tx) error) error {
	if writeFirst(op) && s.grouping != BoltBatch {
		// (bbolt's Batch would roll back the whole batch, and run each of
		// its other functions again alone, at every errWroteNothing.)
		err := s.writeRun(ctx, fn, true)
		if !errors.Is(err, errWroteNothing) {
			return err
		}
	}
	err := s.view(ctx, func(btx *bbolt.Tx) error { return fn(tx{t: btx}) })
	if !errors.Is(err, errWrites) {
		return err
	}
	return s.writeRun(ctx, fn, false)
}

// writeRun runs fn in a durable write transaction. With nothingErr, a
// success that wrote nothing is errWroteNothing, and does not commit.
func (s *Store) writeRun(ctx context.Context, fn func(store.Tx) error, nothingErr bool) error {
	err := s.write(ctx, func(btx *bbolt.Tx) error {
		t := tx{t: btx, wrote: new(bool)}
		err := fn(t)
		if err == nil && !*t.wrote && nothingErr {
			err = errWroteNothing
		}
		if err != nil && !*t.wrote && s.grouping == GroupCommit {
			// A decision's refusal leaves the rest of the group alone.
			return boltgroup.NoWrite(err)
		}
		return err
	})
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return store.ErrClosed
	}
	return err
}

// View implements store.TxStore.
func (s *Store) View(ctx context.Context, fn func(store.Tx) error) error {
	return s.view(ctx, func(btx *bbolt.Tx) error { return fn(tx{t: btx}) })
}

// Generation implements store.Store: the ID in the meta bucket, written
// when the file was created (or first opened by a version that keeps it).
func (s *Store) Generation(ctx context.Context) (string, error) {
	var g string
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		g = string(tx.Bucket(bucketMeta).Get(keyGeneration))
		if err := store.ValidateGeneration(g); err != nil {
			return fmt.Errorf("store: bolt: file generation %q: %v: %w", g, err, store.ErrCorrupt)
		}
		return nil
	})
	return g, err
}
