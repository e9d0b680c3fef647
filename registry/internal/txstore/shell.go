package txstore

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/internal/rollback"
)

// Config is what a Shell runs: a backend Store's own parts.
type Config struct {
	// Name prefixes the Shell's errors and logs ("registry/etcd").
	Name string
	// RolledBack says, in the recovery's log, what a rollback of this
	// store is ("etcd restored from an older snapshot, or emptied").
	RolledBack string
	// Watermark is the Store's; Log receives the recoveries and the
	// state file's failed saves.
	Watermark *rollback.Watermark
	Log       *slog.Logger
	// Step runs fn as one step (writable: an Update, else a View), with
	// its attempts.
	Step func(ctx context.Context, writable bool, fn func(registry.Tx) error) error
	// Recover runs the recovery transaction, with its attempts: it reads
	// the meta (before) and writes the recovered one (after, from
	// rollback.RecoveredMeta).
	Recover func(ctx context.Context) (before, after registry.Meta, err error)
	// Recovered, when set, runs after a recovery committed, before the
	// watermark is lifted to it.
	Recovered func()
}

// Shell runs a Store's steps. It serializes them within the process:
// writes (and recoveries) take it exclusively (they would all conflict on
// the meta key: a conflict then comes only from another process sharing
// the keyspace), views share it. Once closed it refuses them
// (registry.ErrClosed).
type Shell struct {
	cfg Config

	mu     sync.RWMutex
	closed bool
	// restores counts the recoveries.
	restores atomic.Uint64
}

// NewShell returns the Shell of a Store.
func NewShell(cfg Config) *Shell { return &Shell{cfg: cfg} }

// Exclusive runs fn holding the Shell exclusively, as an Update does;
// registry.ErrClosed once it is closed.
func (s *Shell) Exclusive(fn func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unlessClosed(fn)
}

// Shared runs fn sharing the Shell, as a View does; registry.ErrClosed
// once it is closed.
func (s *Shell) Shared(fn func() error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.unlessClosed(fn)
}

// unlessClosed runs fn unless the Shell is closed (called with mu held).
func (s *Shell) unlessClosed(fn func() error) error {
	if s.closed {
		return registry.ErrClosed
	}
	return fn()
}

// Update runs fn as a writable step, exclusively. A step that finds the
// registry's state rolled back (rollback.ErrRolledBack) first recovers,
// then runs again (recovering).
func (s *Shell) Update(ctx context.Context, fn func(registry.Tx) error) error {
	return s.recovering(ctx, func() error {
		return s.Exclusive(func() error { return s.cfg.Step(ctx, true, fn) })
	})
}

// View runs fn as a read-only step, shared; a rolled-back state is
// recovered first, like in Update.
func (s *Shell) View(ctx context.Context, fn func(registry.Tx) error) error {
	return s.recovering(ctx, func() error {
		return s.Shared(func() error { return s.cfg.Step(ctx, false, fn) })
	})
}

// recovering runs step; when it found the state rolled back, it recovers
// and runs it again (rollback.Retry: a second rollback in a row is
// registry.ErrBackend with rollback.ErrRolledBack).
func (s *Shell) recovering(ctx context.Context, step func() error) error {
	return rollback.Retry(step, func(cause error) error {
		return s.Exclusive(func() error { return s.recoverRollback(ctx, cause) })
	})
}

// recoverRollback runs the recovery transaction for cause (a
// rollback.ErrRolledBack), counts and logs it, and lifts the watermark to
// the meta it wrote (saving the state file at once).
func (s *Shell) recoverRollback(ctx context.Context, cause error) error {
	before, after, err := s.cfg.Recover(ctx)
	if err != nil {
		return fmt.Errorf("%s: recovering from a rollback (%v): %w", s.cfg.Name, cause, err)
	}
	s.restores.Add(1)
	s.cfg.Log.Error("registry state rolled back ("+s.cfg.RolledBack+"): issuer epoch bumped and fence floor raised before anything else is issued",
		slog.String("cause", cause.Error()),
		slog.Uint64("issuerEpoch", after.IssuerEpoch), slog.Uint64("previousEpoch", before.IssuerEpoch),
		slog.Uint64("fenceFloor", after.FenceFloor), slog.Uint64("revision", after.Revision))
	if s.cfg.Recovered != nil {
		s.cfg.Recovered()
	}
	return s.cfg.Watermark.Recovered(after)
}

// Restores reports how many rollbacks this process detected and recovered.
func (s *Shell) Restores() uint64 { return s.restores.Load() }

// LiftFloor runs at Open with a state file: it raises the global fence
// floor to the file's ceiling (rollback.RaiseFloor), so that every fence
// this process issues from now on exceeds every fence it issued before,
// whatever the store lost meanwhile. A rollback the watermark does see
// recovers in full first (epoch bump). The cost: after each restart,
// fences jump by up to the fence reserve.
func (s *Shell) LiftFloor(ctx context.Context) error {
	floor := s.cfg.Watermark.Floor()
	if floor == 0 {
		return nil
	}
	return s.Update(ctx, rollback.RaiseFloor(floor))
}

// Run saves the state file every rollback.SaveInterval while the
// watermark moved, until ctx ends (rollback.Watermark.Flush), logging a
// failed save; it returns nil.
func (s *Shell) Run(ctx context.Context) error {
	s.cfg.Watermark.Flush(ctx, func(err error) {
		s.cfg.Log.Error(s.cfg.Name+": saving the state file failed; a restore across a restart of this process may go unseen", "error", err)
	})
	return nil
}

// Seen reports the highest registry revision and fence this process has
// seen: what a rollback is detected against.
func (s *Shell) Seen() (revision, fence uint64) {
	st := s.cfg.Watermark.Snapshot()
	return st.Revision, max(st.MaxFence, st.Ceiling)
}

// Close refuses every later step (registry.ErrClosed): holding the Shell
// exclusively, it runs stop, saves the state file (it gets the latest
// revision seen, so a restart finds a rollback to any copy older than
// this moment) and runs closeClient, whose error comes first. A second
// Close does nothing.
func (s *Shell) Close(stop func(), closeClient func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	stop()
	saveErr := s.cfg.Watermark.Save()
	if err := closeClient(); err != nil {
		return err
	}
	return saveErr
}
