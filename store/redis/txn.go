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

// snapshot is what a transition read of a resource under WATCH.
type snapshot struct {
	rec     store.Record
	recLen  int
	receipt *store.Receipt
	// now is the server's TIME, read in the same round trip (zero when
	// the store decides by the caller's clock: Options.CallerClock).
	now time.Time
}

// transition reads the record of resource (and the receipt of key, if
// set) under WATCH, lets f decide, and writes its Change in MULTI/EXEC;
// a decision that writes nothing is confirmed by an empty EXEC, so the
// two reads were one snapshot. It retries a lost race. It returns the
// change, the quarantine entry as stored (merged), and the record read.
//
// f gets the server's time of the snapshot (zero with Options.CallerClock):
// see at.
func (s *Store) transition(ctx context.Context, op, resource string, key *store.ReceiptKey,
	f func(store.Record, *store.Receipt, time.Time) (store.Change, error)) (store.Change, *store.Quarantine, store.Record, error) {
	var (
		ch   store.Change
		q    *store.Quarantine
		read store.Record
	)
	recKey, qKey := s.k.record(resource), s.k.quarantine(resource)
	err := s.optimistic(ctx, op, func(tx *goredis.Tx) error {
		ch, q, read = store.Change{}, nil, store.Record{}
		snap, err := s.watchRead(ctx, tx, recKey, qKey, resource, key)
		if err != nil {
			return unwatch(ctx, tx, final{err})
		}
		read = snap.rec
		ch, err = f(snap.rec, snap.receipt, snap.now)
		if err != nil {
			return unwatch(ctx, tx, final{err})
		}
		var prevQ []byte
		if ch.Quarantine != nil {
			if prevQ, err = raw(tx.HGet(ctx, qKey, ch.Quarantine.ID), "read quarantine"); err != nil {
				return unwatch(ctx, tx, final{err})
			}
			merged := *ch.Quarantine
			if prevQ != nil {
				prev, err := decodeQuarantine(prevQ, resource, merged.ID)
				if err != nil {
					return unwatch(ctx, tx, final{err})
				}
				merged = merged.Merge(prev)
			}
			q = &merged
		}
		w, err := s.writes(snap, ch, q, prevQ)
		if err != nil {
			return unwatch(ctx, tx, final{err})
		}
		_, err = tx.TxPipelined(ctx, func(p goredis.Pipeliner) error {
			if len(w) == 0 {
				p.Ping(ctx) // an empty EXEC confirms the snapshot
			}
			for _, fn := range w {
				fn(ctx, p)
			}
			return nil
		})
		if err == nil && len(w) > 0 {
			err = s.replicated(ctx, tx)
		}
		return err
	})
	return ch, q, read, err
}

// watchRead WATCHes the resource's record and quarantine keys (and the
// receipt of key) and reads the record and the receipt, in one round trip.
func (s *Store) watchRead(ctx context.Context, tx *goredis.Tx, recKey, qKey, resource string, key *store.ReceiptKey) (snapshot, error) {
	watch := []any{"watch", recKey, qKey}
	var rcKey string
	if key != nil {
		rcKey = s.k.receipt(*key)
		watch = append(watch, rcKey)
	}
	expected, err := s.expect()
	if err != nil {
		return snapshot{}, err
	}
	var recCmd, rcCmd, genCmd *goredis.StringCmd
	var timeCmd *goredis.TimeCmd
	_, err = tx.Pipelined(ctx, func(p goredis.Pipeliner) error {
		p.Do(ctx, watch...)
		recCmd = p.Get(ctx, recKey)
		genCmd = s.readGeneration(ctx, p, expected)
		if key != nil {
			rcCmd = p.Get(ctx, rcKey)
		}
		timeCmd = s.readTime(ctx, p)
		return nil
	})
	if err != nil && !errors.Is(err, goredis.Nil) {
		return snapshot{}, wrap("read", err)
	}
	if err := s.confirmGeneration(genCmd, expected); err != nil {
		return snapshot{}, err
	}
	recRaw, err := raw(recCmd, "read record")
	if err != nil {
		return snapshot{}, err
	}
	var snap snapshot
	if snap.now, err = serverTime(timeCmd); err != nil {
		return snapshot{}, err
	}
	if snap.rec, err = decodeRecord(recRaw, resource); err != nil {
		return snapshot{}, err
	}
	snap.recLen = len(recRaw)
	if key != nil {
		rcRaw, err := raw(rcCmd, "read receipt")
		if err != nil {
			return snapshot{}, err
		}
		if snap.receipt, err = decodeReceipt(rcRaw, *key); err != nil {
			return snapshot{}, err
		}
	}
	return snap, nil
}

// unwatch releases the WATCH of an attempt that ends without EXEC and
// returns err.
func unwatch(ctx context.Context, tx *goredis.Tx, err error) error {
	_ = tx.Unwatch(ctx).Err()
	return err
}

// write is one queued command of a MULTI.
type write func(context.Context, goredis.Pipeliner)

// writes turns a change into the commands of its MULTI: the record with
// the global indexes, the receipt with its operation and compaction
// indexes, the merged quarantine entry, and the counters Stats reads.
// prevQ is the stored quarantine entry q replaces, if any.
func (s *Store) writes(snap snapshot, ch store.Change, q *store.Quarantine, prevQ []byte) ([]write, error) {
	var w []write
	var bytes int64
	if ch.WriteRecord {
		r := ch.Record
		b, err := encode(r)
		if err != nil {
			return nil, err
		}
		bytes += int64(len(b) - snap.recLen)
		res := r.Resource
		w = append(w, func(ctx context.Context, p goredis.Pipeliner) {
			p.Set(ctx, s.k.record(res), b, 0)
			p.SAdd(ctx, s.k.all(), res)
			setIndex(ctx, p, s.k.unknown(), res, r.InFlight != nil)
			setIndex(ctx, p, s.k.paused(), res, r.Pause != nil)
		})
	}
	if ch.WriteReceipt {
		r := ch.Receipt
		b, err := encode(r)
		if err != nil {
			return nil, err
		}
		bytes += int64(len(b))
		w = append(w, func(ctx context.Context, p goredis.Pipeliner) {
			p.Set(ctx, s.k.receipt(r.Key()), b, 0)
			p.SAdd(ctx, s.k.ops(r.Resource, r.OperationID), u(r.Fence))
			p.ZAdd(ctx, s.k.receipts(r.Resource), goredis.Z{Member: member(r.Fence, r.Seq)})
			p.Incr(ctx, s.k.nReceipts())
		})
	}
	if q != nil {
		b, err := encode(*q)
		if err != nil {
			return nil, err
		}
		bytes += int64(len(b) - len(prevQ))
		isNew := prevQ == nil
		w = append(w, func(ctx context.Context, p goredis.Pipeliner) {
			p.HSet(ctx, s.k.quarantine(q.Resource), q.ID, b)
			p.SAdd(ctx, s.k.quarantined(), q.Resource)
			if isNew {
				p.Incr(ctx, s.k.nQuarantine())
			}
		})
	}
	if len(w) > 0 && bytes != 0 {
		w = append(w, func(ctx context.Context, p goredis.Pipeliner) { p.IncrBy(ctx, s.k.bytes(), bytes) })
	}
	return w, nil
}

func setIndex(ctx context.Context, p goredis.Pipeliner, key, resource string, present bool) {
	if present {
		p.SAdd(ctx, key, resource)
	} else {
		p.SRem(ctx, key, resource)
	}
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
