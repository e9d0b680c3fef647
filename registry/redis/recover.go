package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/internal/redisconf"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/internal/rollback"
)

// Recovering from a rollback (the shared parts: registry/internal/rollback,
// and registry/internal/txstore's Shell around the transaction).
//
// When a step finds the registry's meta below the watermark (errRolledBack),
// the Redis it reads has lost writes this process saw: grants may have been
// issued that the keyspace no longer records, and the next acquire would
// hand their fences out again. Before anything else is issued, one
// transaction on the meta key:
//
//   - bumps the issuer epoch above every epoch this process saw, so every
//     grant issued before (recorded or forgotten) reads REVOKED, and
//     sidecars that saw the new epoch refuse the old ones (EPOCH_REVOKED);
//   - raises the global fence floor to the watermark's floor: the state
//     file's ceiling (above every fence this process issued) or the
//     highest fence it saw, so the next fence of every resource exceeds
//     them;
//   - sets the revision above every revision this process saw, and the
//     policy generation back to the highest it saw (generations never go
//     back).
//
// Then the step runs again on the recovered state. Every registry process
// sharing the Redis detects the rollback on its own first step and runs the
// same transaction with its own watermark; each only raises, so the floor
// ends above every fence any of them issued. A process that saw nothing
// (started after the restore without a state file) cannot detect it; the
// sidecars' FENCE_REGRESSION check is the last line for what it misses.

// recoverAttempts runs the recovery transaction (txstore.Config.Recover:
// the Shell holds this process's steps off meanwhile, counts and logs it,
// then lifts the watermark).
func (s *Store) recoverAttempts(ctx context.Context) (before, after registry.Meta, err error) {
	err = s.attempt(ctx, func() error {
		return s.wrap(s.c.Watch(ctx, func(rtx *goredis.Tx) error {
			m, err := readMeta(ctx, rtx, s.keys.meta())
			if err != nil {
				return err
			}
			before, after = m, rollback.RecoveredMeta(m, s.wm.Snapshot(), s.wm.Floor())
			raw, err := json.Marshal(after)
			if err != nil {
				return err
			}
			_, err = rtx.TxPipelined(ctx, func(p goredis.Pipeliner) error {
				p.SetNX(ctx, s.keys.schema(), fmt.Sprint(SchemaVersion), 0)
				p.Set(ctx, s.keys.meta(), string(raw), 0)
				return nil
			})
			if err == nil {
				err = redisconf.WaitReplicas(ctx, rtx, s.minReplicas, s.replicaWait)
			}
			return err
		}, s.keys.meta()))
	})
	return before, after, err
}

// readMeta GETs the meta key on rtx (a zero Meta when it is missing).
func readMeta(ctx context.Context, rtx *goredis.Tx, key string) (registry.Meta, error) {
	var m registry.Meta
	raw, err := rtx.Get(ctx, key).Bytes()
	if errors.Is(err, goredis.Nil) {
		return m, nil
	}
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, fmt.Errorf("%w: registry/redis: corrupt meta: %v", registry.ErrBackend, err)
	}
	return m, nil
}

// Restores reports how many rollbacks this process detected and recovered.
func (s *Store) Restores() uint64 { return s.shell.Restores() }

// liftFloor runs at Open with a state file: it raises the global fence
// floor to the file's ceiling, so that every fence this process issues
// from now on exceeds every fence it issued before, whatever Redis lost
// meanwhile. The file's revision may be up to a second stale after a
// crash (rollback.SaveInterval), so a restore to a copy from that last second
// would not be seen as a rollback; the ceiling covers it anyway. A
// rollback the watermark does see recovers in full first (epoch bump).
// The cost: after each restart, fences jump by up to FenceReserve.
func (s *Store) liftFloor(ctx context.Context) error { return s.shell.LiftFloor(ctx) }

// Seen reports the highest registry revision and fence this process has
// seen (read, written, or announced by another process): what a rollback
// is detected against.
func (s *Store) Seen() (revision, fence uint64) { return s.shell.Seen() }
