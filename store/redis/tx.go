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

// tx is a store.Tx on Redis, in one of three modes (txn.go):
//
//   - modeStep (Update): Load answers from the Store's cache when it can
//     (from the server otherwise) and records each value it answered in
//     the read set; writes are buffered as ops; the step script then
//     checks the read set and the decision's time and applies the ops,
//     in one round trip (step.go);
//   - modeWatch (Update, for the transactions the cache does not model:
//     compaction, the enforcement ledger, the trust pins): every read
//     WATCHes the keys it reads in its own round trip, the first one also
//     reads the server's TIME (Now), and the ops go in one MULTI/EXEC;
//   - modeView (View): reads go to the client.
//
// It keeps the stored length of what it read, so that the writes keep
// P:bytes (Stats) in step.
type tx struct {
	s    *Store
	ctx  context.Context
	mode mode
	rtx  *goredis.Tx

	now     time.Time
	nowRead bool
	nowErr  error

	ops []op
	// reads is the step's read set (modeStep).
	reads []read
	// wrote holds the values the ops set for the keys the cache keeps,
	// deleted the keys the ops delete (nil value), applied to the cache
	// once the step committed.
	wrote map[string][]byte
	// adds counts the receipts the ops add, by resource (a trim counts
	// them with the index).
	adds map[string]int
	// fresh holds values the step script returned for the read set of an
	// earlier run of the same call: they win over the cache.
	fresh map[string]entry
	// failed is the error of a read (a Redis error, ErrCorrupt): the call
	// ends with it, whatever fn returns.
	failed error
	// needsWatch is set by a method modeStep does not serve: the call
	// runs again in modeWatch.
	needsWatch bool

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

// mode is how a tx reads and writes.
type mode int

const (
	modeView mode = iota
	modeWatch
	modeStep
)

// errNeedsWatch is what a method answers in modeStep when the step script
// cannot serve it (Update then runs the call in modeWatch).
var errNeedsWatch = errors.New("store/redis: this transaction runs under WATCH")

func (s *Store) newTx(ctx context.Context, m mode, rtx *goredis.Tx) *tx {
	return &tx{s: s, ctx: ctx, mode: m, rtx: rtx, lens: map[string]int{}, wrote: map[string][]byte{}}
}

// cmd is what the transaction's reads go to: the WATCHing connection, or
// the client.
func (t *tx) cmd() goredis.Cmdable {
	if t.rtx != nil {
		return t.rtx
	}
	return t.s.c
}

// watchOnly reports whether the method calling it cannot run in this
// mode, marking the call for modeWatch.
func (t *tx) watchOnly() bool {
	if t.mode == modeStep {
		t.needsWatch = true
		return true
	}
	return false
}

// fail records a read's error: the step ends with it.
func (t *tx) fail(err error) error {
	if t.failed == nil {
		t.failed = err
	}
	return err
}

// read runs the reads queue queues in one round trip: in modeWatch after
// a WATCH of keys, and with TIME when it is the transaction's first.
func (t *tx) read(op string, watch []string, queue func(goredis.Pipeliner)) error {
	var timeCmd *goredis.TimeCmd
	first := t.mode != modeView && !t.nowRead
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
		switch {
		case t.nowErr != nil && t.mode == modeStep:
			t.fail(t.nowErr)
		case t.nowErr == nil && !t.now.IsZero():
			t.s.clock.set(t.now)
		}
	}
	return nil
}

// Now is the time the transaction decides at: zero with
// Options.CallerClock (time.go); in modeStep the Store's estimate of the
// server's clock, which the step script checks; otherwise the server's
// TIME, read with the transaction's first read (in a View, on its own).
func (t *tx) Now() (time.Time, error) {
	if t.nowRead {
		return t.now, t.nowErr
	}
	t.nowRead = true
	switch {
	case t.s.callerClock:
	case t.mode != modeStep:
		t.now, t.nowErr = serverTime(t.s.c.Time(t.ctx))
	default:
		est, ok := t.s.clock.now()
		if !ok {
			tm, err := serverTime(t.s.c.Time(t.ctx))
			if err != nil {
				t.nowErr = t.fail(err)
				break
			}
			t.s.clock.set(tm)
			est = tm
		}
		t.now = est
	}
	return t.now, t.nowErr
}

// queue adds writes.
func (t *tx) queue(ops ...op) { t.ops = append(t.ops, ops...) }

// queued is every write: the ops and the counters they move.
func (t *tx) queued() []op {
	w := t.ops
	if len(w) == 0 {
		return nil
	}
	for _, c := range []struct {
		key string
		n   int64
	}{{t.s.k.nReceipts(), t.nReceipts}, {t.s.k.nQuarantine(), t.nQuarantine}, {t.s.k.bytes(), t.bytes}} {
		if c.n != 0 {
			w = append(w, op{name: "incrby", key: c.key, args: []any{c.n}})
		}
	}
	return w
}

// Load reads the resource's record and (with key) the receipt of key, as
// one snapshot: in modeStep from the cache (see loadStep); otherwise in
// one round trip, WATCHing in modeWatch the record key and quarantine
// hash (and the receipt key), with the generation marker when checks are
// on.
func (t *tx) Load(resource string, key *store.ReceiptKey) (store.Record, *store.Receipt, error) {
	if t.mode == modeStep {
		return t.loadStep(resource, key)
	}
	recKey, qKey := t.s.k.record(resource), t.s.k.quarantine(resource)
	watch := []string{recKey, qKey}
	var rcKey string
	if key != nil {
		rcKey = t.s.k.receipt(*key)
		watch = append(watch, rcKey)
	}
	recRaw, rcRaw, err := t.loadRaw(watch, recKey, rcKey)
	if err != nil {
		return store.Record{}, nil, err
	}
	return t.decodeLoad(resource, key, recRaw, rcRaw)
}

// loadRaw reads the record key and (when rcKey is set) the receipt key,
// with the generation marker (checked) when checks are on, in one round
// trip (a WATCH of watch first in modeWatch).
func (t *tx) loadRaw(watch []string, recKey, rcKey string) (recRaw, rcRaw []byte, err error) {
	expected, err := t.s.gen.Expected()
	if err != nil {
		return nil, nil, err
	}
	var recCmd, rcCmd, genCmd *goredis.StringCmd
	err = t.read("read", watch, func(p goredis.Pipeliner) {
		recCmd = p.Get(t.ctx, recKey)
		genCmd = t.s.readGeneration(t.ctx, p, expected)
		if rcKey != "" {
			rcCmd = p.Get(t.ctx, rcKey)
		}
	})
	if err != nil {
		return nil, nil, err
	}
	if err := t.s.confirmGeneration(genCmd, expected); err != nil {
		return nil, nil, err
	}
	if recRaw, err = raw(recCmd, "read record"); err != nil {
		return nil, nil, err
	}
	if rcKey != "" {
		if rcRaw, err = raw(rcCmd, "read receipt"); err != nil {
			return nil, nil, err
		}
	}
	return recRaw, rcRaw, nil
}

// decodeLoad decodes what Load read.
func (t *tx) decodeLoad(resource string, key *store.ReceiptKey, recRaw, rcRaw []byte) (store.Record, *store.Receipt, error) {
	rec, err := decodeRecord(recRaw, resource)
	if err != nil {
		return store.Record{}, nil, err
	}
	t.lens[t.s.k.record(resource)] = len(recRaw)
	if key == nil {
		return rec, nil, nil
	}
	rc, err := decodeReceipt(rcRaw, *key)
	return rec, rc, err
}

// loadStep is Load in modeStep: the record and the receipt from the
// values of an earlier run of this call or the Store's cache (a receipt
// without an entry presumed absent); a record key the cache does not
// hold is read from the server with the receipt (and the generation
// marker, and TIME), without WATCH: the step script checks them. Each
// value answered joins the read set.
func (t *tx) loadStep(resource string, key *store.ReceiptKey) (store.Record, *store.Receipt, error) {
	recKey, rcKey := t.s.k.record(resource), ""
	if key != nil {
		rcKey = t.s.k.receipt(*key)
	}
	rec, ok := t.lookup(recKey)
	var rc entry
	if rcKey != "" {
		rc, _ = t.lookup(rcKey) // none: presumed absent
	}
	if !ok {
		recRaw, rcRaw, err := t.loadRaw(nil, recKey, rcKey)
		if err != nil {
			return store.Record{}, nil, t.fail(err)
		}
		rec, rc = entry{val: recRaw, present: recRaw != nil}, entry{val: rcRaw, present: rcRaw != nil}
		t.s.cache.put(recKey, recRaw)
		if rcKey != "" {
			t.s.cache.put(rcKey, rcRaw)
		}
	}
	t.reads = append(t.reads, read{kind: readString, key: recKey, val: rec.val})
	if rcKey != "" {
		t.reads = append(t.reads, read{kind: readString, key: rcKey, val: rc.val})
	}
	r, c, err := t.decodeLoad(resource, key, rec.val, rc.val)
	if err != nil {
		return store.Record{}, nil, t.fail(err)
	}
	return r, c, nil
}

// lookup is the value of key this call knows: returned by the step
// script to an earlier run, or cached.
func (t *tx) lookup(key string) (entry, bool) {
	if e, ok := t.fresh[key]; ok {
		return e, true
	}
	return t.s.cache.get(key)
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
	t.wrote[k.record(res)] = b
	t.queue(op{name: "set", key: k.record(res), args: []any{b}},
		op{name: "sadd", key: k.all(), args: []any{res}},
		setIndex(k.unknown(), res, r.InFlight != nil),
		setIndex(k.paused(), res, r.Pause != nil))
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
	t.wrote[k.receipt(r.Key())] = b
	if t.adds == nil {
		t.adds = map[string]int{}
	}
	t.adds[r.Resource]++
	t.queue(op{name: "set", key: k.receipt(r.Key()), args: []any{b}},
		op{name: "sadd", key: k.ops(r.Resource, r.OperationID), args: []any{u(r.Fence)}},
		op{name: "zadd", key: k.receipts(r.Resource), args: []any{0, member(r.Fence, r.Seq)}})
	return nil
}

// Quarantine reads an entry with HGET (its hash WATCHed by Load in
// modeWatch; in modeStep the field joins the read set, read from the
// server: a quarantine is rare, and not cached).
func (t *tx) Quarantine(resource, id string) (*store.Quarantine, error) {
	qKey := t.s.k.quarantine(resource)
	b, err := raw(t.cmd().HGet(t.ctx, qKey, id), "read quarantine")
	if err != nil {
		return nil, t.fail(err)
	}
	if t.mode == modeStep {
		t.reads = append(t.reads, read{kind: readField, key: qKey, field: id, val: b})
	}
	if b == nil {
		return nil, nil
	}
	q, err := decodeQuarantine(b, resource, id)
	if err != nil {
		return nil, t.fail(err)
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
	t.queue(op{name: "hset", key: k.quarantine(q.Resource), args: []any{q.ID, b}},
		op{name: "sadd", key: k.quarantined(), args: []any{q.Resource}})
	return nil
}

// Enforcement WATCHes the whole ledger (one hash: a write to any shape
// makes a concurrent write to another retry) and reads one entry.
func (t *tx) Enforcement(shape string) (*store.Enforcement, error) {
	if t.watchOnly() {
		return nil, errNeedsWatch
	}
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
	t.queue(op{name: "hset", key: key, args: []any{e.Shape, b}})
	return nil
}

func (t *tx) Enforcements() ([]store.Enforcement, error) {
	if t.watchOnly() {
		return nil, errNeedsWatch
	}
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
	if t.watchOnly() {
		return nil, errNeedsWatch
	}
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
	t.queue(op{name: "del", key: key})
	if len(vals) > 0 {
		t.queue(op{name: "hset", key: key, args: vals})
	}
	return nil
}

// Receipts reads receipts in one pipeline.
func (t *tx) Receipts(ks []store.ReceiptKey) ([]*store.Receipt, error) {
	if t.watchOnly() {
		return nil, errNeedsWatch
	}
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
	if t.watchOnly() {
		return nil, errNeedsWatch
	}
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
	if t.watchOnly() {
		return nil, errNeedsWatch
	}
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
	if t.watchOnly() {
		return nil, errNeedsWatch
	}
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
	expected, err := t.s.gen.Expected()
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
	if t.watchOnly() {
		return nil, errNeedsWatch
	}
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

// setIndex is the op that puts resource in the index set key, or takes it
// out.
func setIndex(key, resource string, present bool) op {
	if present {
		return op{name: "sadd", key: key, args: []any{resource}}
	}
	return op{name: "srem", key: key, args: []any{resource}}
}
