package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/store"
)

// tx is a store.Tx on Redis. In an Update (rtx set) every read WATCHes the
// keys it reads in its own round trip, the first one also reads the
// server's TIME (Now), and the writes are queued for the MULTI/EXEC; in a
// View (rtx nil) reads go to the client. It keeps the stored length of
// what it read, so that the writes keep P:bytes (Stats) in step.
type tx struct {
	s   *Store
	ctx context.Context
	rtx *goredis.Tx

	now     time.Time
	nowRead bool
	nowErr  error

	writes []write
	// lens is the stored length of each value read, by key (a hash field
	// as key NUL field); 0 for a value absent.
	lens map[string]int
	// nq is the number of quarantine entries of each resource read by
	// CompactSnapshot.
	nq map[string]int
	// bytes, nReceipts and nQuarantine are what the writes add to P:bytes
	// and the counters.
	bytes, nReceipts, nQuarantine int64
}

// write is one queued command of a MULTI.
type write func(context.Context, goredis.Pipeliner)

func (s *Store) newTx(ctx context.Context, rtx *goredis.Tx) *tx {
	return &tx{s: s, ctx: ctx, rtx: rtx, lens: map[string]int{}}
}

// cmd is what the transaction's reads go to: the WATCHing connection, or
// the client.
func (t *tx) cmd() goredis.Cmdable {
	if t.rtx != nil {
		return t.rtx
	}
	return t.s.c
}

// read runs the reads queue queues in one round trip: in an Update after
// a WATCH of keys, and with TIME when it is the transaction's first.
func (t *tx) read(op string, watch []string, queue func(goredis.Pipeliner)) error {
	var timeCmd *goredis.TimeCmd
	first := t.rtx != nil && !t.nowRead
	_, err := t.cmd().Pipelined(t.ctx, func(p goredis.Pipeliner) error {
		if t.rtx != nil && len(watch) > 0 {
			args := make([]any, 0, len(watch)+1)
			args = append(args, "watch")
			for _, k := range watch {
				args = append(args, k)
			}
			p.Do(t.ctx, args...)
		}
		queue(p)
		if first {
			timeCmd = t.s.readTime(t.ctx, p)
		}
		return nil
	})
	if err != nil && !errors.Is(err, goredis.Nil) {
		return wrap(op, err)
	}
	if first {
		t.nowRead = true
		t.now, t.nowErr = serverTime(timeCmd)
	}
	return nil
}

// Now is the server's TIME, read with the transaction's first read (in a
// View, on its own), or zero with Options.CallerClock (time.go).
func (t *tx) Now() (time.Time, error) {
	if !t.nowRead {
		t.nowRead = true
		if !t.s.callerClock {
			t.now, t.nowErr = serverTime(t.s.c.Time(t.ctx))
		}
	}
	return t.now, t.nowErr
}

// queue adds a write to the MULTI.
func (t *tx) queue(w write) { t.writes = append(t.writes, w) }

// queued is the MULTI: the writes and the counters they move.
func (t *tx) queued() []write {
	w := t.writes
	if len(w) == 0 {
		return nil
	}
	for _, c := range []struct {
		key string
		n   int64
	}{{t.s.k.nReceipts(), t.nReceipts}, {t.s.k.nQuarantine(), t.nQuarantine}, {t.s.k.bytes(), t.bytes}} {
		if c.n != 0 {
			w = append(w, func(ctx context.Context, p goredis.Pipeliner) { p.IncrBy(ctx, c.key, c.n) })
		}
	}
	return w
}

// Load WATCHes the resource's record key and quarantine hash (and the
// receipt key of key) and reads the record, the receipt and, when checks
// are on, the generation marker, in one round trip.
func (t *tx) Load(resource string, key *store.ReceiptKey) (store.Record, *store.Receipt, error) {
	recKey, qKey := t.s.k.record(resource), t.s.k.quarantine(resource)
	watch := []string{recKey, qKey}
	var rcKey string
	if key != nil {
		rcKey = t.s.k.receipt(*key)
		watch = append(watch, rcKey)
	}
	expected, err := t.s.expect()
	if err != nil {
		return store.Record{}, nil, err
	}
	var recCmd, rcCmd, genCmd *goredis.StringCmd
	err = t.read("read", watch, func(p goredis.Pipeliner) {
		recCmd = p.Get(t.ctx, recKey)
		genCmd = t.s.readGeneration(t.ctx, p, expected)
		if key != nil {
			rcCmd = p.Get(t.ctx, rcKey)
		}
	})
	if err != nil {
		return store.Record{}, nil, err
	}
	if err := t.s.confirmGeneration(genCmd, expected); err != nil {
		return store.Record{}, nil, err
	}
	recRaw, err := raw(recCmd, "read record")
	if err != nil {
		return store.Record{}, nil, err
	}
	rec, err := decodeRecord(recRaw, resource)
	if err != nil {
		return store.Record{}, nil, err
	}
	t.lens[recKey] = len(recRaw)
	if key == nil {
		return rec, nil, nil
	}
	rcRaw, err := raw(rcCmd, "read receipt")
	if err != nil {
		return store.Record{}, nil, err
	}
	rc, err := decodeReceipt(rcRaw, *key)
	return rec, rc, err
}

// PutRecord writes the record (of a resource Load read) with the global
// indexes.
func (t *tx) PutRecord(r store.Record) error {
	b, err := encode(r)
	if err != nil {
		return err
	}
	k := t.s.k
	res := r.Resource
	t.bytes += int64(len(b) - t.lens[k.record(res)])
	t.queue(func(ctx context.Context, p goredis.Pipeliner) {
		p.Set(ctx, k.record(res), b, 0)
		p.SAdd(ctx, k.all(), res)
		setIndex(ctx, p, k.unknown(), res, r.InFlight != nil)
		setIndex(ctx, p, k.paused(), res, r.Pause != nil)
	})
	return nil
}

// PutReceipt writes a receipt (written once) with its operation and
// compaction indexes.
func (t *tx) PutReceipt(r store.Receipt) error {
	b, err := encode(r)
	if err != nil {
		return err
	}
	k := t.s.k
	t.bytes += int64(len(b))
	t.nReceipts++
	t.queue(func(ctx context.Context, p goredis.Pipeliner) {
		p.Set(ctx, k.receipt(r.Key()), b, 0)
		p.SAdd(ctx, k.ops(r.Resource, r.OperationID), u(r.Fence))
		p.ZAdd(ctx, k.receipts(r.Resource), goredis.Z{Member: member(r.Fence, r.Seq)})
	})
	return nil
}

// Quarantine reads an entry with HGET (its hash WATCHed by Load).
func (t *tx) Quarantine(resource, id string) (*store.Quarantine, error) {
	qKey := t.s.k.quarantine(resource)
	b, err := raw(t.cmd().HGet(t.ctx, qKey, id), "read quarantine")
	if err != nil || b == nil {
		return nil, err
	}
	q, err := decodeQuarantine(b, resource, id)
	if err != nil {
		return nil, err
	}
	t.lens[qKey+"\x00"+id] = len(b)
	return &q, nil
}

func (t *tx) PutQuarantine(q store.Quarantine) error {
	b, err := encode(q)
	if err != nil {
		return err
	}
	k := t.s.k
	prev := t.lens[k.quarantine(q.Resource)+"\x00"+q.ID]
	t.bytes += int64(len(b) - prev)
	if prev == 0 {
		t.nQuarantine++
	}
	t.queue(func(ctx context.Context, p goredis.Pipeliner) {
		p.HSet(ctx, k.quarantine(q.Resource), q.ID, b)
		p.SAdd(ctx, k.quarantined(), q.Resource)
	})
	return nil
}

// Enforcement WATCHes the whole ledger (one hash: a write to any shape
// makes a concurrent write to another retry) and reads one entry.
func (t *tx) Enforcement(shape string) (*store.Enforcement, error) {
	key := t.s.k.enforcement()
	var get *goredis.StringCmd
	if err := t.read("read enforcement", []string{key}, func(p goredis.Pipeliner) { get = p.HGet(t.ctx, key, shape) }); err != nil {
		return nil, err
	}
	b, err := raw(get, "read enforcement")
	if err != nil || b == nil {
		return nil, err
	}
	var e store.Enforcement
	if err := decode(b, "enforcement of "+shape, &e); err != nil {
		return nil, err
	}
	t.lens[key+"\x00"+shape] = len(b)
	return &e, nil
}

func (t *tx) PutEnforcement(e store.Enforcement) error {
	b, err := encode(e)
	if err != nil {
		return err
	}
	key := t.s.k.enforcement()
	t.bytes += int64(len(b) - t.lens[key+"\x00"+e.Shape])
	t.queue(func(ctx context.Context, p goredis.Pipeliner) { p.HSet(ctx, key, e.Shape, b) })
	return nil
}

func (t *tx) Enforcements() ([]store.Enforcement, error) {
	m, err := t.cmd().HGetAll(t.ctx, t.s.k.enforcement()).Result()
	if err != nil {
		return nil, wrap("enforcements", err)
	}
	out := make([]store.Enforcement, 0, len(m))
	for shape, v := range m {
		var e store.Enforcement
		if err := decode([]byte(v), "enforcement of "+shape, &e); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// TrustedKeys reads the pins, one hash WATCHed as a whole.
func (t *tx) TrustedKeys() ([]store.TrustedKey, error) {
	key := t.s.k.trust()
	var all *goredis.MapStringStringCmd
	if err := t.read("read trust", []string{key}, func(p goredis.Pipeliner) { all = p.HGetAll(t.ctx, key) }); err != nil {
		return nil, err
	}
	out, n, err := decodeTrust(all.Val())
	t.lens[key] = n
	return out, err
}

// PutTrustedKeys replaces the pins hash.
func (t *tx) PutTrustedKeys(pins []store.TrustedKey) error {
	vals := make([]any, 0, 2*len(pins))
	n := 0
	for _, p := range pins {
		b, err := encode(p)
		if err != nil {
			return err
		}
		vals = append(vals, p.Kid, b)
		n += len(b)
	}
	key := t.s.k.trust()
	t.bytes += int64(n - t.lens[key])
	t.queue(func(ctx context.Context, p goredis.Pipeliner) {
		p.Del(ctx, key)
		if len(vals) > 0 {
			p.HSet(ctx, key, vals...)
		}
	})
	return nil
}

// Receipts reads receipts in one pipeline.
func (t *tx) Receipts(ks []store.ReceiptKey) ([]*store.Receipt, error) {
	cmds := make([]*goredis.StringCmd, len(ks))
	if err := t.read("read receipts", nil, func(p goredis.Pipeliner) {
		for i, k := range ks {
			cmds[i] = p.Get(t.ctx, t.s.k.receipt(k))
		}
	}); err != nil {
		return nil, err
	}
	out := make([]*store.Receipt, len(ks))
	for i, c := range cmds {
		b, err := raw(c, "read receipt")
		if err != nil {
			return nil, err
		}
		if out[i], err = decodeReceipt(b, ks[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (t *tx) OperationFences(resource, operationID string) ([]uint64, error) {
	members, err := t.cmd().SMembers(t.ctx, t.s.k.ops(resource, operationID)).Result()
	if err != nil {
		return nil, wrap("receipts by operation", err)
	}
	fences := make([]uint64, 0, len(members))
	for _, m := range members {
		f, err := strconv.ParseUint(m, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("store/redis: operation index of %q %s: member %q: %w", resource, operationID, m, store.ErrCorrupt)
		}
		fences = append(fences, f)
	}
	return fences, nil
}

// Indexed reads a global index, then the records it names: a record that
// has left the index in between is still returned (the caller filters).
func (t *tx) Indexed(index store.Index) ([]store.Record, error) {
	key, op := t.s.k.unknown(), "list unknown"
	if index == store.IndexPaused {
		key, op = t.s.k.paused(), "list paused"
	}
	resources, err := t.cmd().SMembers(t.ctx, key).Result()
	if err != nil {
		return nil, wrap(op, err)
	}
	slices.Sort(resources)
	return t.recordsOf(resources, op)
}

// RecordsAfter reads the names of every resource with a record (P:res, a
// set: O(resources) a page), sorts them and reads the page's records in
// one pipeline with the generation marker.
func (t *tx) RecordsAfter(after string, limit int) ([]store.Record, error) {
	resources, err := t.cmd().SMembers(t.ctx, t.s.k.all()).Result()
	if err != nil {
		return nil, wrap("records", err)
	}
	slices.Sort(resources)
	i, found := slices.BinarySearch(resources, after)
	if found {
		i++
	}
	return t.recordsOf(resources[i:min(len(resources), i+limit)], "records")
}

// recordsOf reads the records of resources in one pipeline, with the
// generation marker when checks are on; each must exist.
func (t *tx) recordsOf(resources []string, op string) ([]store.Record, error) {
	if len(resources) == 0 {
		return nil, nil
	}
	expected, err := t.s.expect()
	if err != nil {
		return nil, err
	}
	var genCmd *goredis.StringCmd
	cmds := make([]*goredis.StringCmd, len(resources))
	if err := t.read(op, nil, func(p goredis.Pipeliner) {
		for i, r := range resources {
			cmds[i] = p.Get(t.ctx, t.s.k.record(r))
		}
		genCmd = t.s.readGeneration(t.ctx, p, expected)
	}); err != nil {
		return nil, err
	}
	if err := t.s.confirmGeneration(genCmd, expected); err != nil {
		return nil, err
	}
	out := make([]store.Record, 0, len(resources))
	for i, c := range cmds {
		b, err := raw(c, op)
		if err != nil {
			return nil, err
		}
		if b == nil {
			return nil, fmt.Errorf("store/redis: %s: index names %q without a record: %w", op, resources[i], store.ErrCorrupt)
		}
		rec, err := decodeRecord(b, resources[i])
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}

// Quarantined reads the quarantine hashes of resource (of every resource
// in P:quar when resource is "") in one pipeline.
func (t *tx) Quarantined(resource string) ([]store.Quarantine, error) {
	resources := []string{resource}
	if resource == "" {
		var err error
		if resources, err = t.cmd().SMembers(t.ctx, t.s.k.quarantined()).Result(); err != nil {
			return nil, wrap("list quarantined", err)
		}
	}
	if len(resources) == 0 {
		return nil, nil
	}
	cmds := make([]*goredis.MapStringStringCmd, len(resources))
	if err := t.read("read quarantine", nil, func(p goredis.Pipeliner) {
		for i, r := range resources {
			cmds[i] = p.HGetAll(t.ctx, t.s.k.quarantine(r))
		}
	}); err != nil {
		return nil, err
	}
	var out []store.Quarantine
	for i, c := range cmds {
		for id, v := range c.Val() {
			q, err := decodeQuarantine([]byte(v), resources[i], id)
			if err != nil {
				return nil, err
			}
			out = append(out, q)
		}
	}
	return out, nil
}

func setIndex(ctx context.Context, p goredis.Pipeliner, key, resource string, present bool) {
	if present {
		p.SAdd(ctx, key, resource)
	} else {
		p.SRem(ctx, key, resource)
	}
}
