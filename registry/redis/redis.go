package redis

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/internal/redisconf"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/internal/txstore"
)

// SchemaVersion is the format version of the stored values, kept under
// the "schema" key.
const SchemaVersion = 1

// Defaults of Options.
const (
	DefaultMaxAttempts = 16
	DefaultScanBatch   = 256
	DefaultScanLimit   = 10000
)

var (
	// ErrSchema is returned when the keyspace holds another schema version.
	ErrSchema = errors.New("registry/redis: unsupported schema version")
	// ErrContention is returned (with registry.ErrBackend) when a step
	// met a WATCH conflict on every one of its attempts.
	ErrContention = errors.New("registry/redis: optimistic transaction conflicts")
)

// Options configure a Store.
type Options struct {
	// Addr is the server's host:port (required).
	Addr string
	// Username is the ACL user ("" for the default user).
	Username string
	// Password authenticates to the server ("" for none).
	Password string
	// DB is the logical database number.
	DB int
	// TLS, when set, encrypts the connection (nil: plain TCP).
	TLS *tls.Config
	// Prefix is the key prefix, used as a hash tag (DefaultPrefix when
	// empty). It must not contain '{' or '}'.
	Prefix string
	// MaxAttempts bounds how many times one step runs when its WATCHed
	// keys change under it (DefaultMaxAttempts when zero). After the last
	// conflict the step fails with ErrContention: never a decision.
	MaxAttempts int
	// ScanBatch is the COUNT hint of each SCAN of a compaction
	// (DefaultScanBatch when zero).
	ScanBatch int
	// ScanLimit bounds how many leases one compaction examines
	// (DefaultScanLimit when zero). The scan resumes where the previous
	// one stopped, so every lease is examined over successive compactions.
	ScanLimit int
	// DialTimeout, ReadTimeout and WriteTimeout are go-redis's (its
	// defaults when zero).
	DialTimeout, ReadTimeout, WriteTimeout time.Duration
	// AllowEviction skips Open's check that the server's maxmemory-policy
	// is noeviction. Set it only when keys cannot be evicted anyway (a
	// volatile-* policy: the registry sets no TTL) and the server reports
	// another policy. An evicted key forgets issued fences: fail-open.
	AllowEviction bool
	// AllowNonDurable lets Open accept a server that does not run with
	// appendonly yes and appendfsync always (see ErrNotDurable), logging a
	// warning that names what it reported: for a scratch server in
	// development, never where a lost write matters.
	AllowNonDurable bool
	// StateFile, when set, is a local file where this process keeps its
	// watermark (the highest revision, issuer epoch and policy generation
	// it saw) and a fence ceiling reserved FenceReserve above the highest
	// fence it issued, fsynced before a fence above the previous ceiling
	// is issued. A process restarted along with a Redis restored from an
	// older copy then detects the rollback and raises the fence floor above
	// every fence it issued (see recover.go). Without it the watermark is
	// kept in memory only: a rollback under a running process is still
	// detected; one across its restart is not. The registry server sets
	// dataDir/redis-state.json.
	StateFile string
	// FenceReserve is how far above a fence the ceiling is reserved
	// (DefaultFenceReserve when zero): a larger reserve saves the state
	// file less often, and makes fences jump further after a recovery.
	FenceReserve uint64
	// MinReplicas, when positive, makes every write wait (WAIT on the
	// step's connection, one more round trip) until that many replicas
	// acknowledged it, at most ReplicaTimeout (1s when zero): a grant is
	// answered only once it is on them, so a failover to one of them does
	// not hand its fence out again. Fewer is registry.ErrBackend (the
	// write is on the primary: its outcome is unknown to the caller, who
	// acquires again with the same request ID).
	MinReplicas    int
	ReplicaTimeout time.Duration
	// Logger receives Open's warnings: a server that does not let it read
	// maxmemory-policy or its persistence (CONFIG disabled), one accepted
	// under AllowNonDurable; slog.Default() when nil.
	Logger *slog.Logger
}

// Store is a Redis-backed registry.TxStore: every Update is one
// WATCH/read/MULTI/EXEC step retried on conflict, every View a WATCHed
// read validated by an empty EXEC.
type Store struct {
	c           *goredis.Client
	keys        keyspace
	maxAttempts int
	scanBatch   int
	scanLimit   int

	// shell serializes this process's steps: writes take it exclusively,
	// so they never conflict with each other and a WATCH conflict can only
	// come from another process sharing the keyspace; views share it. It
	// refuses them once closed and recovers from a rollback
	// (registry/internal/txstore). records names the keys of the
	// transactions' records.
	shell   *txstore.Shell
	records txstore.Keys
	// cursor is where the next compaction's SCAN resumes (guarded by the
	// shell, held exclusively by Update); examined are the keys of the SCAN
	// reply at cursor that the last walk examined before it reached its
	// limit, which the next one, scanning that reply again, skips.
	cursor   uint64
	examined map[string]bool

	// origin marks this Store's notifications (see Notify); subs are its
	// subscriptions, closed by Close (guarded by the shell).
	origin string
	subs   []*goredis.PubSub
	log    *slog.Logger

	// wm is what this process saw of the registry's state; a meta read
	// below it is a rollback (watermark.go, recover.go).
	wm *watermark

	minReplicas int
	replicaWait time.Duration
}

// Open connects to the server, checks that its maxmemory-policy is
// noeviction (see ErrEvictionPolicy and Options.AllowEviction) and the
// keyspace's schema version (writing it into a new keyspace).
func Open(ctx context.Context, o Options) (*Store, error) {
	if o.Addr == "" {
		return nil, errors.New("registry/redis: addr is required")
	}
	ks, err := newKeyspace(o.Prefix)
	if err != nil {
		return nil, err
	}
	origin, err := txstore.NewOrigin("registry/redis")
	if err != nil {
		return nil, err
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.Default()
	}
	wm, err := loadWatermark(o.StateFile, o.FenceReserve)
	if err != nil {
		return nil, err
	}
	s := &Store{
		wm:          wm,
		minReplicas: o.MinReplicas,
		replicaWait: o.ReplicaTimeout,
		origin:      origin,
		log:         logger,
		keys:        ks,
		maxAttempts: orDefault(o.MaxAttempts, DefaultMaxAttempts),
		scanBatch:   orDefault(o.ScanBatch, DefaultScanBatch),
		scanLimit:   orDefault(o.ScanLimit, DefaultScanLimit),
		records:     txstore.Keys{Meta: ks.meta(), Resource: ks.resource, Lease: ks.lease, Store: ks.store, Ledger: ks.ledger},
	}
	s.shell = txstore.NewShell(txstore.Config{
		Name: "registry/redis", RolledBack: "Redis restored from an older copy, failed over to a lagging replica, or restarted empty",
		Watermark: &wm.Watermark, Log: logger,
		Step: s.runStep, Recover: s.recoverAttempts,
	})
	s.c = goredis.NewClient(&goredis.Options{
		Addr:         o.Addr,
		Username:     o.Username,
		Password:     o.Password,
		DB:           o.DB,
		DialTimeout:  o.DialTimeout,
		ReadTimeout:  o.ReadTimeout,
		WriteTimeout: o.WriteTimeout,
		TLSConfig:    o.TLS,
		// No client-side retry: a command whose reply was lost may have
		// run, and an EXEC resent without its WATCH would write blind.
		// A failed step is reported, never replayed.
		MaxRetries: -1,
	})
	if !o.AllowEviction {
		if err := checkEviction(ctx, s.c, o.Logger); err != nil {
			s.c.Close()
			return nil, err
		}
	}
	if err := checkDurable(ctx, o.AllowNonDurable, s.c, o.Logger); err != nil {
		s.c.Close()
		return nil, err
	}
	if err := s.checkSchema(ctx); err != nil {
		s.c.Close()
		return nil, err
	}
	if err := s.liftFloor(ctx); err != nil {
		s.c.Close()
		return nil, err
	}
	return s, nil
}

// Run saves the state file (Options.StateFile) every second while the
// watermark moved, until ctx ends; without a state file it only waits for
// ctx. It returns nil. Registry.Run runs it (the backend of OpenBackend
// is a registry.Runner). Without Run the file is still saved before a
// step that issues a fence (when the ceiling must move or the last save
// is over a second old) and at Close: only what the process reads or
// hears while it issues no fence may reach the disk later than a second.
func (s *Store) Run(ctx context.Context) error { return s.shell.Run(ctx) }

// OpenBackend opens a Store and returns it as a registry.Backend that is
// also a registry.Notifier (notify.go) and a registry.Runner (Run).
func OpenBackend(ctx context.Context, o Options) (registry.Backend, error) {
	s, err := Open(ctx, o)
	if err != nil {
		return nil, err
	}
	return txstore.NewBackend(s), nil
}

func orDefault(v, d int) int {
	if v <= 0 {
		return d
	}
	return v
}

func (s *Store) checkSchema(ctx context.Context) error {
	want := fmt.Sprint(SchemaVersion)
	if err := s.c.SetNX(ctx, s.keys.schema(), want, 0).Err(); err != nil {
		return fmt.Errorf("%w: registry/redis: %w", registry.ErrBackend, err)
	}
	got, err := s.c.Get(ctx, s.keys.schema()).Result()
	if err != nil {
		return fmt.Errorf("%w: registry/redis: %w", registry.ErrBackend, err)
	}
	if got != want {
		return fmt.Errorf("%w: keyspace has %q, this build reads %s", ErrSchema, got, want)
	}
	return nil
}

// Update runs fn as one optimistic transaction: the keys fn reads are
// WATCHed as it reads them, its writes are buffered and sent in one
// MULTI/EXEC. When a WATCHed key changed, EXEC writes nothing and fn runs
// again on fresh reads, at most MaxAttempts times in all.
//
// A step that finds the registry's state rolled back (errRolledBack: Redis
// restored from an older copy, or restarted empty) first recovers (see
// recover.go), then runs again.
func (s *Store) Update(ctx context.Context, fn func(registry.Tx) error) error {
	return s.shell.Update(ctx, fn)
}

// View runs fn over a consistent snapshot: its reads are WATCHed, and an
// EXEC with nothing to write checks that none of them changed before fn's
// result is returned (else fn runs again).
// A rolled-back state is recovered first, like in Update.
func (s *Store) View(ctx context.Context, fn func(registry.Tx) error) error {
	return s.shell.View(ctx, fn)
}

// runStep runs fn as one step, retried on conflict (attempt); the Shell
// calls it, holding this process's steps off (an Update) or sharing them
// (a View).
func (s *Store) runStep(ctx context.Context, writable bool, fn func(registry.Tx) error) error {
	return s.attempt(ctx, func() error { return s.step(ctx, writable, fn) })
}

// errConflict marks an attempt whose EXEC found a WATCHed key changed.
var errConflict = errors.New("registry/redis: watched key changed")

// attempt runs try until it does not conflict, at most maxAttempts times,
// with a short jittered backoff between attempts.
func (s *Store) attempt(ctx context.Context, try func() error) error {
	for i := range s.maxAttempts {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := try()
		if !errors.Is(err, errConflict) {
			return err
		}
		if i+1 < s.maxAttempts {
			backoff := time.Duration(rand.Int64N(int64(time.Millisecond) << min(i, 6)))
			// Backoff between WATCH attempts waits on a real socket's peer:
			// real time.
			t := clock.Real().NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C():
			}
		}
	}
	return fmt.Errorf("%w: %w after %d attempts", registry.ErrBackend, ErrContention, s.maxAttempts)
}

// step is one attempt: run fn (its reads WATCH their keys as they read
// them: the meta too, for every decision that reads it), then EXEC the
// buffered writes (or nothing, for a view). Nothing is WATCHed that the
// step did not read, so an anchor step, which reads the lineage without
// WATCHing the meta (tx.Lineage), does not conflict with lease writes.
func (s *Store) step(ctx context.Context, writable bool, fn func(registry.Tx) error) error {
	var fnErr error
	err := s.c.Watch(ctx, func(rtx *goredis.Tx) error {
		t := newTx(ctx, s, rtx, writable)
		if fnErr = fn(t); fnErr != nil {
			unwatch(ctx, rtx)
			return fnErr
		}
		if writable {
			// The ceiling on disk covers the fences this step issues
			// before they can be handed out.
			if fnErr = t.Reserve(); fnErr != nil {
				unwatch(ctx, rtx)
				return fnErr
			}
		}
		_, err := rtx.TxPipelined(ctx, func(p goredis.Pipeliner) error {
			if !writable {
				// Nothing to write: EXEC only checks the WATCHed keys.
				p.Ping(ctx)
				return nil
			}
			if err := t.flush(p); err != nil {
				return err
			}
			if m := t.Written(); m != nil {
				// Inside the MULTI: announced exactly when committed.
				p.Publish(ctx, s.keys.state(), s.wm.announce(s.origin, *m, t.MaxFence()))
			}
			for _, r := range t.Ended() {
				// The other processes' waiters are woken by the commit
				// itself, not by a later round trip (see Notify).
				p.Publish(ctx, s.keys.ended(), s.origin+" "+r)
			}
			return nil
		})
		if err == nil && writable {
			t.Committed()
			err = redisconf.WaitReplicas(ctx, rtx, s.minReplicas, s.replicaWait)
		}
		return err
	})
	if fnErr != nil {
		// The decision's own error, or a read's (already wrapped).
		return fnErr
	}
	return s.wrap(err)
}

// unwatch ends the WATCHes of a step that sends no EXEC (its function
// refused or failed). The reads WATCH through a pipeline, which go-redis
// does not track, so its Tx.Close would not UNWATCH: the connection would
// go back to the pool still watching, and the next step on it would
// conflict with a change of a key only this step read
// (TestRefusedStepLeavesNoWatch). A failed UNWATCH is harmless to the
// decisions (a stale WATCH only makes a later EXEC fail and retry); the
// connection's error is go-redis's to handle. It is sent even when the
// step's context has ended (the client's timeouts bound it), since the
// connection outlives the step.
func unwatch(ctx context.Context, rtx *goredis.Tx) {
	_ = rtx.Unwatch(context.WithoutCancel(ctx)).Err()
}

// wrap maps a go-redis error to the registry's: a WATCH conflict to
// errConflict (retried), a closed client to registry.ErrClosed, any other
// server or connection failure to registry.ErrBackend. Errors of the
// context pass unchanged.
func (s *Store) wrap(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, goredis.TxFailedErr):
		return errConflict
	case errors.Is(err, goredis.ErrClosed):
		return registry.ErrClosed
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	default:
		return fmt.Errorf("%w: registry/redis: %w", registry.ErrBackend, err)
	}
}

// Close closes the connections; every later call fails with
// registry.ErrClosed. The data stays in Redis.
func (s *Store) Close() error {
	return s.shell.Close(func() {
		for _, ps := range s.subs {
			_ = ps.Close()
		}
		s.subs = nil
	}, func() error {
		if err := s.c.Close(); err != nil {
			return fmt.Errorf("registry/redis: close: %w", err)
		}
		return nil
	})
}
