package redis

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/internal/redisconf"
	"github.com/fencegate/fencegate/store"
)

// Backoff between optimistic attempts: full jitter, doubling from
// backoffBase up to backoffMax.
const (
	backoffBase = 200 * time.Microsecond
	backoffMax  = 20 * time.Millisecond
)

// final carries an error out of an attempt that is returned as is and never
// retried: a decision's error (a pure function's ErrNotInFlight, ...), or
// one already wrapped (a failed read, ErrCorrupt). Any other error of an
// attempt is Redis's, from EXEC, and gets wrapped.
type final struct{ err error }

func (d final) Error() string { return d.err.Error() }

// Update implements store.TxStore with optimistic concurrency: fn reads
// under WATCH (every read of the transaction WATCHes the keys it reads, in
// the same round trip) and queues its writes, which go in one MULTI/EXEC;
// a transaction that queued none still sends one (a PING), so that its
// reads are confirmed to be one snapshot. A lost race (EXEC answering
// nil) runs fn again after a jittered backoff, at most Options.MaxAttempts
// times, then fails with ErrContention, having written nothing. An error
// of fn ends the call as it is, without EXEC.
func (s *Store) Update(ctx context.Context, op string, fn func(store.Tx) error) error {
	ctx, err := s.enter(ctx)
	if err != nil {
		return err
	}
	return s.optimistic(ctx, op, func(rtx *goredis.Tx) error {
		t := s.newTx(ctx, rtx)
		if err := fn(t); err != nil {
			return unwatch(ctx, rtx, final{err})
		}
		_, err := rtx.TxPipelined(ctx, func(p goredis.Pipeliner) error {
			if len(t.writes) == 0 {
				p.Ping(ctx) // an empty EXEC confirms the snapshot
			}
			for _, w := range t.queued() {
				w(ctx, p)
			}
			return nil
		})
		if err == nil && len(t.writes) > 0 {
			err = s.replicated(ctx, rtx)
		}
		return err
	})
}

// View implements store.TxStore: fn's reads go to the server as they
// come, each method one round trip (or two: an index, then what it
// names), without WATCH.
func (s *Store) View(ctx context.Context, fn func(store.Tx) error) error {
	ctx, err := s.enter(ctx)
	if err != nil {
		return err
	}
	return fn(s.newTx(ctx, nil))
}

// optimistic runs attempt under WATCH until it commits (nil), fails for
// another reason than a lost race, or loses maxAttempts times.
func (s *Store) optimistic(ctx context.Context, op string, attempt func(tx *goredis.Tx) error) error {
	for i := range s.maxAttempts {
		if i > 0 {
			// Backoff between WATCH attempts: real time (the store itself
			// never reads a clock; this only spaces retries on a socket).
			clock.Sleep(clock.Real(), backoff(i), nil)
		}
		err := s.c.Watch(ctx, attempt)
		if err == nil {
			return nil
		}
		if d, ok := err.(final); ok {
			return d.err
		}
		if !errors.Is(err, goredis.TxFailedErr) {
			return wrap(op, err)
		}
	}
	return wrap(op, ErrContention)
}

func backoff(attempt int) time.Duration {
	d := backoffBase << min(attempt, 10)
	if d > backoffMax {
		d = backoffMax
	}
	return rand.N(d) + 1
}

// unwatch releases the WATCH of an attempt that ends without EXEC and
// returns err.
func unwatch(ctx context.Context, tx *goredis.Tx, err error) error {
	_ = tx.Unwatch(ctx).Err()
	return err
}

// replicated waits for Options.MinReplicas replicas to acknowledge the
// writes tx's connection just made (nothing when MinReplicas is zero). Its
// failure is final: the EXEC ran, so the call is not retried.
func (s *Store) replicated(ctx context.Context, tx *goredis.Tx) error {
	if err := redisconf.WaitReplicas(ctx, tx, s.minReplicas, s.replicaWait); err != nil {
		return final{wrap("replicate", err)}
	}
	return nil
}
