package redis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
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

// Update implements store.TxStore. fn runs in modeStep (tx.go): it
// decides on the values the Store's cache holds (or, for a key it does
// not hold, reads from the server) at the Store's estimate of the
// server's clock, and its writes are buffered; then one round trip of the
// step script (step.go) checks that every value fn read is still the
// server's, and the time, and applies the writes. A decision error of fn
// is checked the same way, with no writes, before it is returned. When
// the check fails, the script writes nothing and returns the current
// values and TIME: fn runs again on them, at most Options.MaxAttempts
// times (the second run at once, later ones after a jittered backoff),
// then the call fails with ErrContention, having written nothing. A read
// error of fn (a Redis error, ErrCorrupt) ends the call as it is. A
// transaction the step script does not serve (compaction, the ledger,
// the pins) runs under WATCH and MULTI/EXEC instead (updateWatched).
func (s *Store) Update(ctx context.Context, op string, fn func(store.Tx) error) error {
	ctx, err := s.enter(ctx)
	if err != nil {
		return err
	}
	fresh := map[string]entry{}
	for i := range s.maxAttempts {
		if i > 1 {
			// Backoff between runs: real time (the store itself never
			// reads a clock to decide; this only spaces retries).
			clock.Sleep(clock.Real(), backoff(i-1), nil)
		}
		done, err := s.runStep(ctx, op, fn, fresh)
		if err == errNeedsWatch {
			return s.updateWatched(ctx, op, fn)
		}
		if done {
			return err
		}
	}
	return wrap(op, ErrContention)
}

// runStep runs fn once in modeStep and sends its step: done (with the
// call's error, nil for success) unless the script refused it, or
// errNeedsWatch for a transaction to run in modeWatch. It holds
// one of s.slots from before fn decides until the reply: a step waiting
// for a connection of the client's pool waits before it reads the time
// it decides at, not after (which would make the script refuse it as
// late).
func (s *Store) runStep(ctx context.Context, op string, fn func(store.Tx) error, fresh map[string]entry) (bool, error) {
	s.slots <- struct{}{}
	defer func() { <-s.slots }()
	t := s.newTx(ctx, modeStep, nil)
	t.fresh = fresh
	ferr := fn(t)
	if t.needsWatch {
		return true, errNeedsWatch
	}
	if t.failed != nil {
		s.cache.drop(t.keys()...)
		return true, cmp.Or(ferr, t.failed)
	}
	done, err := s.commitStep(ctx, op, t, ferr != nil)
	if err != nil {
		return true, err
	}
	return done, ferr
}

// commitStep sends t's step (without its writes when fn failed: only its
// reads are checked) and applies the reply: done when the step held (its
// writes applied), not done when it must run again (t.fresh then holds
// the values to run on). An error is final: a Redis error (the step's
// keys leave the cache: an error after the script was sent leaves its
// outcome unknown), ErrCorrupt, or the loss of the generation.
func (s *Store) commitStep(ctx context.Context, name string, t *tx, discard bool) (done bool, err error) {
	expected, lost := s.gen.Expected()
	if lost != nil {
		return false, lost
	}
	genKey := ""
	if expected != "" {
		genKey = s.k.generation()
	}
	var ops []op
	if !discard {
		ops = t.queued()
	}
	decided := time.Time{}
	if t.nowRead {
		decided = t.now
	}
	keys, args := stepArgs(decided, genKey, expected, t.reads, ops)
	rep, err := s.sendStep(ctx, name, keys, args, len(ops) > 0)
	if err != nil {
		s.cache.drop(t.keys()...)
		return false, err
	}
	switch rep.outcome {
	case "time":
		// Every read held, the time did not: run again at the server's.
		s.refusedTime.Add(1)
		s.clock.reset(rep.time)
		return false, nil
	}
	s.clock.set(rep.time)
	switch rep.outcome {
	case "gen":
		got, _ := replyBytes(rep.values[0])
		if err := s.checkGeneration(got, expected); err != nil {
			return false, err
		}
		return false, wrap(name, errors.New("the generation marker changed under the step"))
	case "retry":
		s.retried.Add(1)
		return false, t.refresh(rep.values)
	}
	t.committed(len(ops) > 0, rep.values)
	return true, nil
}

// refresh keeps the current values the script returned for t's read set,
// for the next run of the call (t.fresh) and in the cache.
func (t *tx) refresh(values []any) error {
	if len(values) != len(t.reads) {
		return wrap("step", fmt.Errorf("the script returned %d values for %d reads", len(values), len(t.reads)))
	}
	for i, r := range t.reads {
		if r.kind != readString {
			continue // quarantine fields are read from the server each run
		}
		v, err := replyBytes(values[i])
		if err != nil {
			return wrap("step", err)
		}
		t.fresh[r.key] = entry{val: v, present: v != nil}
		t.s.cache.put(r.key, v)
	}
	return nil
}

// committed updates the cache after the step held: the values read are
// the server's, then those written (when the writes went), and the
// receipts the script trimmed are gone.
func (t *tx) committed(wrote bool, trimmed []any) {
	c := t.s.cache
	for _, r := range t.reads {
		if r.kind == readString {
			c.put(r.key, r.val)
		}
	}
	if !wrote {
		return
	}
	for k, v := range t.wrote {
		c.put(k, v)
	}
	for _, v := range trimmed {
		if k, ok := v.(string); ok {
			c.drop(k)
		}
	}
}

// keys are the cached keys t read or wrote.
func (t *tx) keys() []string {
	out := make([]string, 0, len(t.reads)+len(t.wrote))
	for _, r := range t.reads {
		out = append(out, r.key)
	}
	for k := range t.wrote {
		out = append(out, k)
	}
	return out
}

// updateWatched runs fn in modeWatch: its reads WATCH what they read (in
// the same round trip), its writes go in one MULTI/EXEC; a transaction
// that queued none still sends one (a PING), so that its reads are
// confirmed to be one snapshot. A lost race (EXEC answering nil) runs fn
// again after a jittered backoff, at most Options.MaxAttempts times, then
// fails with ErrContention, having written nothing. An error of fn ends
// the call as it is, without EXEC. The keys it deleted leave the cache.
func (s *Store) updateWatched(ctx context.Context, op string, fn func(store.Tx) error) error {
	var deleted []string
	err := s.optimistic(ctx, op, func(rtx *goredis.Tx) error {
		t := s.newTx(ctx, modeWatch, rtx)
		if err := fn(t); err != nil {
			return unwatch(ctx, rtx, final{err})
		}
		ops := t.queued()
		_, err := rtx.TxPipelined(ctx, func(p goredis.Pipeliner) error {
			if len(ops) == 0 {
				p.Ping(ctx) // an empty EXEC confirms the snapshot
			}
			for _, o := range ops {
				p.Do(ctx, append([]any{o.name, o.key}, o.args...)...)
			}
			return nil
		})
		if err == nil && len(ops) > 0 {
			err = s.replicated(ctx, rtx)
		}
		deleted = t.keys()
		return err
	})
	s.cache.drop(deleted...)
	return err
}

// View implements store.TxStore: fn's reads go to the server as they
// come, each method one round trip (or two: an index, then what it
// names), without WATCH.
func (s *Store) View(ctx context.Context, fn func(store.Tx) error) error {
	ctx, err := s.enter(ctx)
	if err != nil {
		return err
	}
	return fn(s.newTx(ctx, modeView, nil))
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
