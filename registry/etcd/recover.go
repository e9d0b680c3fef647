package etcd

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/internal/rollback"
)

// Recovering from a rollback (the shared parts: registry/internal/rollback,
// and registry/internal/txstore's Shell around the transaction).
//
// When a step finds the registry's meta below the watermark, etcd has lost
// writes this process saw (a snapshot restore, a wiped cluster): grants may
// have been issued that the keyspace no longer records, and the next
// acquire would hand their fences out again. Before anything else is
// issued, one etcd transaction, compared on the meta's mod revision (a
// replica recovering at the same moment makes it run again on the meta
// that replica wrote):
//
//   - bumps the issuer epoch above every epoch this process saw, so every
//     grant issued before (recorded or forgotten) reads REVOKED;
//   - raises the global fence floor to the watermark's floor (the state
//     file's ceiling, or the highest fence seen), so the next fence of
//     every resource exceeds them;
//   - sets the revision above every revision seen, the policy generation
//     back to the highest seen;
//   - puts the wake-up key of every resource (ended/), as an epoch bump
//     does: the other replicas' waiters decide again.
//
// Then the watches of this Store are started again from etcd's current
// revision (a restore without --bump-revision moved it back: a watch
// resumed at the revision it had reached would wait for revisions that
// the restored cluster has yet to reach, missing the wake-ups meanwhile),
// and the step runs again. Every replica that saw more recovers on its own
// next step; recoveries only raise, so they compose.

// recoverAttempts runs the recovery transaction (txstore.Config.Recover:
// the Shell holds this process's steps off meanwhile, counts and logs it,
// then restarts the watches and lifts the watermark).
func (s *Store) recoverAttempts(ctx context.Context) (before, after registry.Meta, err error) {
	err = s.attempt(ctx, func(actx context.Context) error {
		var err error
		before, after, err = s.recoverOnce(actx)
		return err
	})
	return before, after, err
}

// recoverOnce is one attempt of the recovery transaction: it reads the
// meta (its mod revision compared at commit) and writes the recovered one.
func (s *Store) recoverOnce(ctx context.Context) (before, after registry.Meta, err error) {
	x := newKV(ctx, s.c)
	key := s.keys.meta()
	raw, err := x.get(key)
	if err != nil {
		return before, after, s.wrap(err)
	}
	if raw != nil {
		if before, err = decode[registry.Meta](key, *raw); err != nil {
			return before, after, err
		}
	}
	after = rollback.RecoveredMeta(before, s.wm.Snapshot(), s.wm.Floor())
	b, err := json.Marshal(after)
	if err != nil {
		return before, after, fmt.Errorf("registry/etcd: encode: %w", err)
	}
	val, origin := string(b), s.origin
	x.put(key, &val)
	x.put(s.keys.ended(""), &origin)
	ok, err := x.commit()
	switch {
	case err != nil && ctx.Err() != nil:
		return before, after, ctx.Err()
	case err != nil:
		return before, after, s.wrap(err)
	case !ok:
		return before, after, errConflict
	}
	return before, after, nil
}

// Restores reports how many rollbacks this process detected and recovered.
func (s *Store) Restores() uint64 { return s.shell.Restores() }

// liftFloor runs at Open with a state file: it raises the global fence
// floor to the file's ceiling, so that every fence this process issues
// from now on exceeds every fence it issued before, whatever etcd lost
// meanwhile (a restore to a snapshot from the last second before a crash,
// which the file's revision may not reveal). A rollback the watermark does
// see recovers in full first (epoch bump). The cost: after each restart,
// fences jump by up to FenceReserve.
func (s *Store) liftFloor(ctx context.Context) error { return s.shell.LiftFloor(ctx) }

// Run saves the state file (Options.StateFile) every second while the
// watermark moved, until ctx ends; without a state file it only waits for
// ctx. It returns nil. Registry.Run runs it (the backend of OpenBackend is
// a registry.Runner). Without Run the file is still saved before a step
// that issues a fence (when the ceiling must move or the last save is over
// a second old) and at Close.
func (s *Store) Run(ctx context.Context) error { return s.shell.Run(ctx) }

// Seen reports the highest registry revision and fence this process has
// seen (read or written): what a rollback is detected against.
func (s *Store) Seen() (revision, fence uint64) { return s.shell.Seen() }
