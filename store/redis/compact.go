package redis

import (
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

// CompactResources lists the resources with a record or quarantine
// entries (SUNION), in resource order. store.NewTxBackend compacts each in
// its own optimistic transaction (store.TxOptions.CompactEachResource).
func (t *tx) CompactResources() ([]string, error) {
	if t.watchOnly() {
		return nil, errNeedsWatch
	}
	resources, err := t.cmd().SUnion(t.ctx, t.s.k.all(), t.s.k.quarantined()).Result()
	if err != nil {
		return nil, wrap("compact", err)
	}
	slices.Sort(resources)
	return resources, nil
}

// CompactSnapshot WATCHes the resource's record, receipts index and
// quarantine hash and reads the record, the number of receipts and the
// quarantine entries in one round trip.
func (t *tx) CompactSnapshot(resource string) (store.CompactSnapshot, error) {
	if t.watchOnly() {
		return store.CompactSnapshot{}, errNeedsWatch
	}
	recKey, zKey, qKey := t.s.k.record(resource), t.s.k.receipts(resource), t.s.k.quarantine(resource)
	var (
		recCmd *goredis.StringCmd
		nCmd   *goredis.IntCmd
		qCmd   *goredis.MapStringStringCmd
	)
	if err := t.read("compact: read", []string{recKey, zKey, qKey}, func(p goredis.Pipeliner) {
		recCmd = p.Get(t.ctx, recKey)
		nCmd = p.ZCard(t.ctx, zKey)
		qCmd = p.HGetAll(t.ctx, qKey)
	}); err != nil {
		return store.CompactSnapshot{}, err
	}
	b, err := raw(recCmd, "compact: read record")
	if err != nil {
		return store.CompactSnapshot{}, err
	}
	snap := store.CompactSnapshot{Receipts: int(nCmd.Val())}
	if snap.Record, err = decodeRecord(b, resource); err != nil {
		return store.CompactSnapshot{}, err
	}
	qraw := qCmd.Val()
	for id, v := range qraw {
		q, err := decodeQuarantine([]byte(v), resource, id)
		if err != nil {
			return store.CompactSnapshot{}, err
		}
		snap.Quarantine = append(snap.Quarantine, q)
		t.lens[qKey+"\x00"+id] = len(v)
	}
	if t.nq == nil {
		t.nq = map[string]int{}
	}
	t.nq[resource] = len(qraw)
	return snap, nil
}

// DeleteReceipt queues the deletion of a receipt (read by Stamps) with its
// index entries.
func (t *tx) DeleteReceipt(st store.ReceiptStamp) error {
	k, key := t.s.k, st.Key
	t.bytes -= int64(t.lens[k.receipt(key)])
	t.nReceipts--
	t.wrote[k.receipt(key)] = nil
	t.queue(op{name: "del", key: k.receipt(key)},
		op{name: "srem", key: k.ops(key.Resource, st.OperationID), args: []any{u(key.Fence)}},
		op{name: "zrem", key: k.receipts(key.Resource), args: []any{member(key.Fence, key.Seq)}})
	return nil
}

// DeleteQuarantine queues the deletion of entries CompactSnapshot read;
// a resource left without any leaves P:quar.
func (t *tx) DeleteQuarantine(resource string, ids []string) error {
	k := t.s.k
	qKey := k.quarantine(resource)
	for _, id := range ids {
		t.bytes -= int64(t.lens[qKey+"\x00"+id])
	}
	t.nQuarantine -= int64(len(ids))
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	t.queue(op{name: "hdel", key: qKey, args: args})
	if len(ids) == t.nq[resource] {
		t.queue(op{name: "srem", key: k.quarantined(), args: []any{resource}})
	}
	return nil
}

// Stamps yields the receipts of resource from the oldest (fence, seq),
// reading receiptPage of them per round trip (under the WATCH of the
// receipts index CompactSnapshot set), and records each one's stored
// length.
func (t *tx) Stamps(resource string) iter.Seq2[store.ReceiptStamp, error] {
	return store.PagedStamps(receiptPage, func(n int, _ *store.ReceiptKey) ([]store.ReceiptStamp, error) {
		if t.watchOnly() {
			return nil, errNeedsWatch
		}
		return t.stampPage(resource, int64(n))
	})
}

// stampPage reads the receipts of resource from index position start on,
// up to receiptPage of them: the members of the receipts index, then the
// receipts, in one pipeline.
func (t *tx) stampPage(resource string, start int64) ([]store.ReceiptStamp, error) {
	ctx, s := t.ctx, t.s
	members, err := t.cmd().ZRange(ctx, s.k.receipts(resource), start, start+receiptPage-1).Result()
	if err != nil {
		return nil, wrap("compact: read receipts index", err)
	}
	if len(members) == 0 {
		return nil, nil
	}
	ks := make([]store.ReceiptKey, len(members))
	for i, m := range members {
		if ks[i], err = parseMember(resource, m); err != nil {
			return nil, err
		}
	}
	cmds := make([]*goredis.StringCmd, len(ks))
	if err := t.read("compact: read receipts", nil, func(p goredis.Pipeliner) {
		for i, k := range ks {
			cmds[i] = p.Get(ctx, s.k.receipt(k))
		}
	}); err != nil {
		return nil, err
	}
	out := make([]store.ReceiptStamp, len(ks))
	for i, c := range cmds {
		b, err := raw(c, "compact: read receipt")
		if err != nil {
			return nil, err
		}
		if b == nil {
			return nil, fmt.Errorf("store/redis: receipts index of %q names a missing receipt %v: %w", resource, ks[i], store.ErrCorrupt)
		}
		rc, err := decodeReceipt(b, ks[i])
		if err != nil {
			return nil, err
		}
		t.lens[s.k.receipt(ks[i])] = len(b)
		out[i] = rc.Stamp()
	}
	return out, nil
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

// Stats reads the store's size. Resources, Receipts and Quarantined are
// exact (counters kept in the same transactions as the writes); Bytes is
// the total length of the stored JSON values (records, receipts,
// quarantine entries, the enforcement ledger), without Redis's per-key
// and index overhead.
func (t *tx) Stats() (store.Stats, error) {
	if t.watchOnly() {
		return store.Stats{}, errNeedsWatch
	}
	ctx, s := t.ctx, t.s
	var (
		nRes                 *goredis.IntCmd
		nRcpt, nQuar, nBytes *goredis.StringCmd
	)
	_, err := t.cmd().Pipelined(ctx, func(p goredis.Pipeliner) error {
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

// TrimReceipts of store.Tx. In modeStep it is one op of the step script
// (step.lua, planTrim): with the receipts index's ZCARD plus the receipts
// this step adds, it deletes the oldest beyond keep, at most
// store.MaxTrimPerCommit, each with its operation-index entry, its index
// member and its share of the counters, as DeleteReceipt does; it returns
// 0, the count being known only once the script ran (the step's reply
// names the receipts deleted). The script deletes only receipts below
// trimBound, so what it deletes is what store.TrimOldest would.
//
// In modeWatch the count is the receipts index's ZCARD (a WATCHed read)
// plus the receipt this transaction wrote, and store.TrimOldest deletes.
func (t *tx) TrimReceipts(rec store.Record, keep int) (int, error) {
	if keep < 1 {
		return 0, fmt.Errorf("store/redis: trim %q: keep %d: %w", rec.Resource, keep, store.ErrInvalidInput)
	}
	k, res := t.s.k, rec.Resource
	if t.mode == modeStep {
		t.queue(op{name: "trim", key: k.receipts(res), args: []any{
			keep, store.MaxTrimPerCommit, t.adds[res], trimBound(rec),
			k.res(res) + "rcpt:", k.res(res) + "ops:", k.nReceipts(), k.bytes(),
		}})
		return 0, nil
	}
	zKey := k.receipts(res)
	var n *goredis.IntCmd
	if err := t.read("trim: count", []string{zKey}, func(p goredis.Pipeliner) {
		n = p.ZCard(t.ctx, zKey)
	}); err != nil {
		return 0, err
	}
	return store.TrimOldest(t, rec, int(n.Val())+t.adds[res], keep)
}

// trimBound is the receipts index member of the first receipt a trim must
// keep: the record's last accepted segment, or the mutation in flight's
// when it is lower (store.TrimOldest stops at the first receipt that is
// either, as compaction keeps both). Members are fixed-width, so the
// script compares them as strings.
func trimBound(rec store.Record) string {
	b := member(rec.HighestFence, rec.LastSeq)
	if m := rec.InFlight; m != nil {
		if im := member(m.Fence, m.Seq); im < b {
			b = im
		}
	}
	return b
}
