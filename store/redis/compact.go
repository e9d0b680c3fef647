package redis

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/store"
)

// receiptPage is how many receipts compaction reads per round trip.
const receiptPage = 256

// Compact implements store.Store. It lists the resources with a record or
// quarantine entries, in resource order, and compacts them one at a time,
// each in its own optimistic transaction (store.PlanCompaction over a
// snapshot under WATCH, deletions in MULTI/EXEC), until MaxDeletes. When
// the budget runs out it looks on for a resource with something to delete,
// to set More.
func (s *Store) Compact(ctx context.Context, in store.CompactInput) (store.CompactResult, error) {
	if err := in.Validate(); err != nil {
		return store.CompactResult{}, err
	}
	ctx, err := s.enter(ctx)
	if err != nil {
		return store.CompactResult{}, err
	}
	resources, err := s.c.SUnion(ctx, s.k.all(), s.k.quarantined()).Result()
	if err != nil {
		return store.CompactResult{}, wrap("compact", err)
	}
	slices.Sort(resources)
	var res store.CompactResult
	for _, resource := range resources {
		budget := in.MaxDeletes - res.Receipts - res.Quarantine
		if budget == 0 {
			p, err := s.compactOne(ctx, resource, in, 1, false)
			if err != nil {
				return res, err
			}
			if p.Deletes() > 0 {
				res.More = true
				break
			}
			continue
		}
		p, err := s.compactOne(ctx, resource, in, budget, true)
		if err != nil {
			return res, err
		}
		res.Receipts += len(p.Receipts)
		res.Quarantine += len(p.Quarantine)
		res.More = res.More || p.More
	}
	return res, nil
}

// compactOne plans the compaction of one resource and, if apply, deletes
// what the plan lists in the same optimistic transaction.
func (s *Store) compactOne(ctx context.Context, resource string, in store.CompactInput, budget int, apply bool) (store.CompactPlan, error) {
	recKey, zKey, qKey := s.k.record(resource), s.k.receipts(resource), s.k.quarantine(resource)
	var plan store.CompactPlan
	err := s.optimistic(ctx, "compact", func(tx *goredis.Tx) error {
		plan = store.CompactPlan{}
		var (
			recCmd *goredis.StringCmd
			nCmd   *goredis.IntCmd
			qCmd   *goredis.MapStringStringCmd
			tCmd   *goredis.TimeCmd
		)
		_, err := tx.Pipelined(ctx, func(p goredis.Pipeliner) error {
			p.Do(ctx, "watch", recKey, zKey, qKey)
			recCmd = p.Get(ctx, recKey)
			nCmd = p.ZCard(ctx, zKey)
			qCmd = p.HGetAll(ctx, qKey)
			tCmd = s.readTime(ctx, p)
			return nil
		})
		if err != nil && !errors.Is(err, goredis.Nil) {
			return unwatch(ctx, tx, final{wrap("compact: read", err)})
		}
		b, err := raw(recCmd, "compact: read record")
		if err != nil {
			return unwatch(ctx, tx, final{err})
		}
		rec, err := decodeRecord(b, resource)
		if err != nil {
			return unwatch(ctx, tx, final{err})
		}
		qraw := qCmd.Val()
		var qs []store.Quarantine
		for id, v := range qraw {
			q, err := decodeQuarantine([]byte(v), resource, id)
			if err != nil {
				return unwatch(ctx, tx, final{err})
			}
			qs = append(qs, q)
		}
		srv, err := serverTime(tCmd)
		if err != nil {
			return unwatch(ctx, tx, final{err})
		}
		in := in
		in.Now = at(in.Now, srv)
		lens := map[store.ReceiptKey]int{}
		plan, err = store.PlanCompaction(rec, int(nCmd.Val()), s.stamps(ctx, tx, resource, lens), qs, in, budget)
		if err != nil {
			return unwatch(ctx, tx, final{err})
		}
		if !apply || plan.Deletes() == 0 {
			return unwatch(ctx, tx, nil)
		}
		var freed int64
		for _, st := range plan.Receipts {
			freed += int64(lens[st.Key])
		}
		for _, id := range plan.Quarantine {
			freed += int64(len(qraw[id]))
		}
		_, err = tx.TxPipelined(ctx, func(p goredis.Pipeliner) error {
			for _, st := range plan.Receipts {
				k := st.Key
				p.Del(ctx, s.k.receipt(k))
				p.SRem(ctx, s.k.ops(resource, st.OperationID), u(k.Fence))
				p.ZRem(ctx, zKey, member(k.Fence, k.Seq))
			}
			if n := len(plan.Receipts); n > 0 {
				p.DecrBy(ctx, s.k.nReceipts(), int64(n))
			}
			if n := len(plan.Quarantine); n > 0 {
				p.HDel(ctx, qKey, plan.Quarantine...)
				p.DecrBy(ctx, s.k.nQuarantine(), int64(n))
				if n == len(qraw) {
					p.SRem(ctx, s.k.quarantined(), resource)
				}
			}
			p.DecrBy(ctx, s.k.bytes(), freed)
			return nil
		})
		return err
	})
	return plan, err
}

// stamps yields the receipts of resource from the oldest (fence, seq),
// reading receiptPage of them per round trip on tx (under its WATCH of the
// receipts index), and records each one's stored length in lens.
func (s *Store) stamps(ctx context.Context, tx *goredis.Tx, resource string, lens map[store.ReceiptKey]int) iter.Seq2[store.ReceiptStamp, error] {
	return func(yield func(store.ReceiptStamp, error) bool) {
		zKey := s.k.receipts(resource)
		for start := int64(0); ; start += receiptPage {
			members, err := tx.ZRange(ctx, zKey, start, start+receiptPage-1).Result()
			if err != nil {
				yield(store.ReceiptStamp{}, wrap("compact: read receipts index", err))
				return
			}
			if len(members) == 0 {
				return
			}
			ks := make([]store.ReceiptKey, len(members))
			for i, m := range members {
				k, err := parseMember(resource, m)
				if err != nil {
					yield(store.ReceiptStamp{}, err)
					return
				}
				ks[i] = k
			}
			cmds := make([]*goredis.StringCmd, len(ks))
			_, err = tx.Pipelined(ctx, func(p goredis.Pipeliner) error {
				for i, k := range ks {
					cmds[i] = p.Get(ctx, s.k.receipt(k))
				}
				return nil
			})
			if err != nil && !errors.Is(err, goredis.Nil) {
				yield(store.ReceiptStamp{}, wrap("compact: read receipts", err))
				return
			}
			for i, c := range cmds {
				b, err := raw(c, "compact: read receipt")
				if err == nil && b == nil {
					err = fmt.Errorf("store/redis: receipts index of %q names a missing receipt %v: %w", resource, ks[i], store.ErrCorrupt)
				}
				var rc *store.Receipt
				if err == nil {
					rc, err = decodeReceipt(b, ks[i])
				}
				if err != nil {
					yield(store.ReceiptStamp{}, err)
					return
				}
				lens[ks[i]] = len(b)
				if !yield(rc.Stamp(), nil) {
					return
				}
			}
			if len(members) < receiptPage {
				return
			}
		}
	}
}

func parseMember(resource, m string) (store.ReceiptKey, error) {
	f, sq, ok := strings.Cut(m, ":")
	fence, err1 := strconv.ParseUint(f, 10, 64)
	seq, err2 := strconv.ParseUint(sq, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return store.ReceiptKey{}, fmt.Errorf("store/redis: receipts index of %q: member %q: %w", resource, m, store.ErrCorrupt)
	}
	return store.ReceiptKey{Resource: resource, Fence: fence, Seq: seq}, nil
}

// Stats implements store.Store. Resources, Receipts and Quarantined are
// exact (counters kept in the same transactions as the writes); Bytes is
// the total length of the stored JSON values (records, receipts,
// quarantine entries, the enforcement ledger), without Redis's per-key
// and index overhead.
func (s *Store) Stats(ctx context.Context) (store.Stats, error) {
	ctx, err := s.enter(ctx)
	if err != nil {
		return store.Stats{}, err
	}
	var (
		nRes                 *goredis.IntCmd
		nRcpt, nQuar, nBytes *goredis.StringCmd
	)
	_, err = s.c.Pipelined(ctx, func(p goredis.Pipeliner) error {
		nRes = p.SCard(ctx, s.k.all())
		nRcpt = p.Get(ctx, s.k.nReceipts())
		nQuar = p.Get(ctx, s.k.nQuarantine())
		nBytes = p.Get(ctx, s.k.bytes())
		return nil
	})
	if err != nil && !errors.Is(err, goredis.Nil) {
		return store.Stats{}, wrap("stats", err)
	}
	counter := func(c *goredis.StringCmd) (int64, error) {
		n, err := c.Int64()
		if errors.Is(err, goredis.Nil) {
			return 0, nil
		}
		if err != nil {
			return 0, fmt.Errorf("store/redis: stats: counter %v: %v: %w", c.Args()[1], err, store.ErrCorrupt)
		}
		return n, nil
	}
	st := store.Stats{Resources: int(nRes.Val())}
	var n int64
	if n, err = counter(nRcpt); err != nil {
		return store.Stats{}, err
	}
	st.Receipts = int(n)
	if n, err = counter(nQuar); err != nil {
		return store.Stats{}, err
	}
	st.Quarantined = int(n)
	if st.Bytes, err = counter(nBytes); err != nil {
		return store.Stats{}, err
	}
	return st, nil
}
