package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/internal/rollback"
	"github.com/fencegate/fencegate/registry/internal/txstore"
)

// SchemaVersion is the format version of the stored values, kept under
// the "schema" key.
const SchemaVersion = 1

// Defaults of Options.
const (
	DefaultMaxAttempts = 16
	DefaultDialTimeout = 5 * time.Second
	DefaultScanLimit   = 10000
	// DefaultRetryFor is Options.RetryFor's default: a few of etcd's
	// default election timeouts (1s), so a leader change is ridden out.
	DefaultRetryFor = 3 * time.Second
	// DefaultAttemptTimeout is Options.AttemptTimeout's default.
	DefaultAttemptTimeout = 5 * time.Second
)

var (
	// ErrOptions is returned by Open for options it cannot use.
	ErrOptions = errors.New("registry/etcd: invalid options")
	// ErrSchema is returned when the keyspace holds another schema version.
	ErrSchema = errors.New("registry/etcd: unsupported schema version")
	// ErrTxnTooLarge is returned (with registry.ErrBackend) when etcd
	// refused a step's transaction for its number of operations: the
	// server's --max-txn-ops is below what the registry needs (see the
	// package documentation).
	ErrTxnTooLarge = errors.New("registry/etcd: transaction has more operations than the server's --max-txn-ops")
	// ErrContention is returned (with registry.ErrBackend) when a step's
	// transaction found a key it read changed on every one of its
	// attempts.
	ErrContention = errors.New("registry/etcd: optimistic transaction conflicts")
	// ErrUnavailable is returned (with registry.ErrBackend) when etcd
	// answered a step's read or commit with an unavailability (no leader,
	// leader changed, request timed out, member unreachable: gRPC's
	// Unavailable) on every attempt for Options.RetryFor: the cluster, or
	// the members this client reaches, have no quorum. Nothing was decided
	// on what was read; whether the last commit applied is unknown.
	ErrUnavailable = errors.New("registry/etcd: cluster unavailable (no leader or no quorum reachable)")
)

// Options configure a Store.
type Options struct {
	// Endpoints are the etcd members' client URLs (at least one).
	Endpoints []string
	// DialTimeout bounds the client's connection attempts
	// (DefaultDialTimeout when zero).
	DialTimeout time.Duration
	// TLS, when set, encrypts the connections (nil: plain TCP).
	TLS *tls.Config
	// Username and Password authenticate to etcd ("" for none).
	Username, Password string
	// Prefix is the key prefix (DefaultPrefix when empty): every key is
	// "<prefix>/...". It must not end in '/' nor hold a NUL.
	Prefix string
	// MaxAttempts bounds how many times one step runs when a key it read
	// changed before its transaction (DefaultMaxAttempts when zero).
	// After the last conflict the step fails with ErrContention: never a
	// decision.
	MaxAttempts int
	// ScanLimit bounds how many leases one compaction examines
	// (DefaultScanLimit when zero); the next one resumes after them.
	ScanLimit int
	// StateFile, when set, is a local file where this process keeps its
	// watermark (the highest registry revision, issuer epoch, policy
	// generation and fence it saw) and a fence ceiling reserved
	// FenceReserve above the highest fence it issued, fsynced before a
	// fence above the previous ceiling is issued. A process restarted
	// along with an etcd restored from an older snapshot then detects the
	// rollback and raises the fence floor above every fence it issued
	// (recover.go). Without it the watermark is kept in memory only: a
	// rollback under a running process is still detected and recovered;
	// one across its restart is not. The registry server sets
	// dataDir/etcd-state.json.
	StateFile string
	// FenceReserve is how far above a fence the ceiling is reserved
	// (DefaultFenceReserve when zero): a larger reserve saves the state
	// file less often, and makes fences jump further after a restart.
	FenceReserve uint64
	// RetryFor bounds how long one step is run again after etcd answered
	// it with an unavailability (ErrUnavailable: a leader change, no
	// leader, a member down), each time from fresh linearizable reads
	// (DefaultRetryFor when zero; negative: never). A commit whose outcome
	// that left unknown is thus re-decided on what etcd holds, which is
	// safe: see the package documentation, "Faults".
	RetryFor time.Duration
	// AttemptTimeout bounds one attempt of a step (its reads and commit;
	// DefaultAttemptTimeout when zero). The etcd client waits for a
	// connection to be ready, so without it a step whose only member is
	// down or black-holed would wait for the caller's deadline; an attempt
	// past it counts as ErrUnavailable (its commit's outcome unknown) and
	// is run again within RetryFor.
	AttemptTimeout time.Duration
	// Logger receives the warnings of the wake-up watch and the errors of
	// a recovery; slog.Default() when nil.
	Logger *slog.Logger
}

// Store is an etcd-backed registry.TxStore: every Update and View is one
// software transactional memory run (clientv3/concurrency's STM,
// serializable snapshot isolation) committed by one etcd transaction.
type Store struct {
	c           *clientv3.Client
	keys        keyspace
	maxAttempts int
	retryFor    time.Duration
	attemptFor  time.Duration
	scanLimit   int
	log         *slog.Logger

	// shell serializes this process's steps (writes exclusive, views
	// shared), refuses them once closed and recovers from a rollback
	// (registry/internal/txstore); records names the keys of the
	// transactions' records.
	shell   *txstore.Shell
	records txstore.Keys
	// cursor is the lease key after which the next compaction's walk
	// starts (guarded by the shell, held exclusively by Update).
	cursor string

	// origin marks this Store's wake-up keys; watches are the cancels of
	// its wake-up watches (notify.go), guarded by wmu.
	origin  string
	wmu     sync.Mutex
	watches map[int]context.CancelFunc
	nextW   int
	// watchStarts and watchEnds count the wake-up watches confirmed and
	// ended (WatchCounts).
	watchStarts, watchEnds atomic.Int64

	// restart is closed (and replaced, under wmu) to make every wake-up
	// watch of this Store watch again from etcd's current revision.
	restart chan struct{}
	// etcdRev is the highest etcd revision a step of this Store read at
	// (revisions.go).
	etcdRev atomic.Int64

	// wm is what this process saw of the registry's state, kept in the
	// state file (watermark.go).
	wm rollback.Watermark
}

// Open connects to etcd and checks the keyspace's schema version (writing
// it into a new keyspace). A cluster that does not answer within
// DialTimeout fails Open with registry.ErrBackend.
func Open(ctx context.Context, o Options) (*Store, error) {
	if len(o.Endpoints) == 0 {
		return nil, fmt.Errorf("%w: no endpoints", ErrOptions)
	}
	ks, err := newKeyspace(o.Prefix)
	if err != nil {
		return nil, err
	}
	origin, err := txstore.NewOrigin("registry/etcd")
	if err != nil {
		return nil, err
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.Default()
	}
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   o.Endpoints,
		DialTimeout: orDefault(o.DialTimeout, DefaultDialTimeout),
		TLS:         o.TLS,
		Username:    o.Username,
		Password:    o.Password,
		Logger:      zap.NewNop(),
		Context:     context.WithoutCancel(ctx),
	})
	if err != nil {
		return nil, fmt.Errorf("%w: registry/etcd: connect: %w", registry.ErrBackend, err)
	}
	s := &Store{
		c:           c,
		keys:        ks,
		maxAttempts: orDefault(o.MaxAttempts, DefaultMaxAttempts),
		retryFor:    retryFor(o.RetryFor),
		attemptFor:  orDefault(o.AttemptTimeout, DefaultAttemptTimeout),
		scanLimit:   orDefault(o.ScanLimit, DefaultScanLimit),
		log:         logger,
		origin:      origin,
		watches:     map[int]context.CancelFunc{},
		restart:     make(chan struct{}),
	}
	s.records = txstore.Keys{Meta: ks.meta(), Resource: ks.resource, Lease: ks.lease, Store: ks.store, Ledger: ks.ledger}
	s.shell = txstore.NewShell(txstore.Config{
		Name: "registry/etcd", RolledBack: "etcd restored from an older snapshot, or emptied",
		Watermark: &s.wm, Log: logger,
		Step: s.runStep, Recover: s.recoverAttempts, Recovered: s.restartWatches,
	})
	if err := s.wm.Load(o.StateFile, o.FenceReserve); err != nil {
		_ = c.Close()
		return nil, err
	}
	// The first answer is the schema check's: an unreachable cluster fails
	// Open within the dial timeout (gRPC would wait for ctx's end).
	first, cancel := context.WithTimeout(ctx, orDefault(o.DialTimeout, DefaultDialTimeout))
	defer cancel()
	if err := s.checkSchema(first); err != nil {
		_ = c.Close()
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w: registry/etcd: no answer from %v within the dial timeout: %w", registry.ErrBackend, o.Endpoints, err)
		}
		return nil, err
	}
	if err := s.liftFloor(ctx); err != nil {
		_ = c.Close()
		return nil, err
	}
	return s, nil
}

// OpenBackend opens a Store and returns it as a registry.Backend that is
// also a registry.Notifier (notify.go).
func OpenBackend(ctx context.Context, o Options) (registry.Backend, error) {
	s, err := Open(ctx, o)
	if err != nil {
		return nil, err
	}
	return backend{txstore.NewBackend(s)}, nil
}

// retryFor is Options.RetryFor with its default (0) and its "never"
// (negative).
func retryFor(d time.Duration) time.Duration {
	switch {
	case d < 0:
		return 0
	case d == 0:
		return DefaultRetryFor
	}
	return d
}

func orDefault[T int | time.Duration](v, d T) T {
	if v <= 0 {
		return d
	}
	return v
}

// checkSchema writes the schema version into a new keyspace (a
// transaction on the key's absence) and compares what is there.
func (s *Store) checkSchema(ctx context.Context) error {
	want := strconv.Itoa(SchemaVersion)
	key := s.keys.schema()
	resp, err := s.c.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, want)).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return s.wrap(err)
	}
	if resp.Succeeded {
		return nil
	}
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) != 1 || string(kvs[0].Value) != want {
		return fmt.Errorf("%w: keyspace has %q, this build reads %s", ErrSchema, valueOf(kvs), want)
	}
	return nil
}

// Update runs fn as one transaction: its reads are recorded with their
// mod revisions, its writes buffered, and one etcd transaction puts the
// writes if none of the keys read changed. On a conflict fn runs again on
// fresh reads, at most MaxAttempts times in all.
//
// A step that finds the registry's state rolled back (ErrRolledBack: etcd
// restored from an older snapshot, or emptied) first recovers (see
// recover.go), then runs again.
func (s *Store) Update(ctx context.Context, fn func(registry.Tx) error) error {
	return s.shell.Update(ctx, fn)
}

// View runs fn over a snapshot that is current when View returns: the
// reads are made at one etcd revision (the first linearizable), and an
// etcd transaction with nothing to write checks that none of the keys
// read changed since (else fn runs again). A status proof thus states
// the registry as it was at a moment inside the call: linearizable.
// A rolled-back state is recovered first, like in Update.
func (s *Store) View(ctx context.Context, fn func(registry.Tx) error) error {
	return s.shell.View(ctx, fn)
}

// runStep runs fn as one step, its attempts bounded (attempt); the Shell
// calls it, holding this process's steps off (an Update) or sharing them
// (a View).
func (s *Store) runStep(ctx context.Context, writable bool, fn func(registry.Tx) error) error {
	return s.attempt(ctx, func(actx context.Context) error { return s.step(actx, writable, fn) })
}

// errConflict marks an attempt whose transaction found a key it read
// changed.
var errConflict = errors.New("registry/etcd: a key read changed")

// attempt runs try (one attempt: one transaction, under a context bounded
// by attemptFor) until it commits or fails otherwise: at most maxAttempts
// conflicts, and for at most retryFor after etcd first answered
// unavailable, with a short jittered backoff in between. Every attempt
// reads afresh, so a commit whose outcome an unavailability left unknown
// is re-decided on what etcd holds (see "Faults" in the package
// documentation).
func (s *Store) attempt(ctx context.Context, try func(context.Context) error) error {
	var giveUp time.Time // zero until the first unavailability
	conflicts := 0
	for i := 0; ; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := s.bounded(ctx, try)
		switch {
		case errors.Is(err, errConflict):
			if conflicts++; conflicts >= s.maxAttempts {
				return fmt.Errorf("%w: %w after %d attempts", registry.ErrBackend, ErrContention, s.maxAttempts)
			}
		case errors.Is(err, ErrUnavailable):
			// Real time: the cluster's election runs on it.
			now := clock.Real().Now()
			if giveUp.IsZero() {
				giveUp = now.Add(s.retryFor)
			}
			if !now.Before(giveUp) {
				return err
			}
		default:
			return err
		}
		if err := backoff(ctx, i); err != nil {
			return err
		}
	}
}

func backoff(ctx context.Context, i int) error {
	d := time.Duration(rand.Int64N(int64(time.Millisecond) << min(i, 6)))
	// Backoff between attempts waits on a real cluster: real time.
	t := clock.Real().NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}

// bounded is one attempt within attemptFor: one that ran out of it while
// ctx did not is ErrUnavailable.
func (s *Store) bounded(ctx context.Context, try func(context.Context) error) error {
	actx, cancel := context.WithTimeout(ctx, s.attemptFor)
	defer cancel()
	err := try(actx)
	if err != nil && ctx.Err() == nil && actx.Err() != nil {
		return fmt.Errorf("%w: %w: no answer within %v: %w", registry.ErrBackend, ErrUnavailable, s.attemptFor, err)
	}
	return err
}

// step is one attempt: fn over a fresh transaction (watermark snapshot
// first, then the first read, linearizable), then the commit.
func (s *Store) step(ctx context.Context, writable bool, fn func(registry.Tx) error) error {
	seen := s.wm.Snapshot() // before the first read: see watermark.check
	seenRev := s.etcdRev.Load()
	t := newTx(ctx, s, writable, seen)
	err := fn(t)
	s.readAt(seenRev, t.kv.rev)
	if err != nil {
		return err
	}
	if err := t.finish(); err != nil {
		return err
	}
	if writable {
		// The ceiling on disk covers the fences this step issues before
		// they can be handed out.
		if err := t.Reserve(); err != nil {
			return err
		}
	}
	ok, err := t.kv.commit()
	switch {
	case err != nil && ctx.Err() != nil:
		// gRPC reports an ended context as a status of its own.
		return ctx.Err()
	case err != nil:
		return s.wrap(err)
	case !ok:
		return errConflict
	}
	if writable {
		t.Committed()
	}
	return nil
}

// wrap maps a client error to the registry's: errConflict passes (it is
// retried), as do the context's errors; a closed client is
// registry.ErrClosed; any other failure registry.ErrBackend (the outcome
// of a write is then unknown to the caller, as the registry documents).
func (s *Store) wrap(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errConflict), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case retryable(err):
		return errConflict
	case errors.Is(err, rpctypes.ErrTooManyOps):
		return fmt.Errorf("%w: %w: %w", registry.ErrBackend, ErrTxnTooLarge, err)
	case unavailable(err):
		return fmt.Errorf("%w: %w: %w", registry.ErrBackend, ErrUnavailable, err)
	default:
		return fmt.Errorf("%w: registry/etcd: %w", registry.ErrBackend, err)
	}
}

// Close stops the wake-up watches and closes the client; every later
// call fails with registry.ErrClosed. The data stays in etcd.
func (s *Store) Close() error {
	return s.shell.Close(s.stopWatches, func() error {
		if err := s.c.Close(); err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("registry/etcd: close: %w", err)
		}
		return nil
	})
}
