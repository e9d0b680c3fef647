package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/internal/txstore"
)

// tx is one attempt of a step: a registry.Tx whose reads are WATCHed GETs
// on the step's connection and whose writes are buffered until flush
// queues them in the step's MULTI. A read sees the step's own buffered
// writes first.
type tx struct {
	// Records are the step's meta, resource, lease, store and ledger
	// records (registry/internal/txstore), over GetJSON and PutJSON.
	txstore.Records
	ctx      context.Context
	s        *Store
	rtx      *goredis.Tx
	writable bool

	// strings are buffered string writes by key; nil deletes the key.
	strings map[string]*string
	// policies are buffered policy writes by pattern.
	policies map[string]fencegate.Policy
	// order is the order keys were first written, for a deterministic
	// MULTI.
	order []string
	// indexed are the (store, resource) pairs whose anchors this step
	// writes: ZADDed to the store's anchor index in the MULTI (an index
	// entry is only ever added, so it is not WATCHed).
	indexed [][2]string
}

func newTx(ctx context.Context, s *Store, rtx *goredis.Tx, writable bool) *tx {
	t := &tx{ctx: ctx, s: s, rtx: rtx, writable: writable, strings: map[string]*string{}, policies: map[string]fencegate.Policy{}}
	t.Records = txstore.NewRecords(t, &s.records, &s.wm.Watermark, nil) // each meta read checked against the watermark of just before it
	return t
}

// watchGet WATCHes key and reads it, in one round trip (WATCH is
// processed first, so any later change of key makes EXEC fail).
func (t *tx) watchGet(key string) (string, bool, error) {
	if v, ok := t.strings[key]; ok {
		if v == nil {
			return "", false, nil
		}
		return *v, true, nil
	}
	var get *goredis.StringCmd
	_, err := t.rtx.Pipelined(t.ctx, func(p goredis.Pipeliner) error {
		p.Do(t.ctx, "watch", key)
		get = p.Get(t.ctx, key)
		return nil
	})
	if errors.Is(err, goredis.Nil) {
		err = nil
	}
	if err != nil {
		return "", false, t.s.wrap(err)
	}
	v, err := get.Result()
	if errors.Is(err, goredis.Nil) {
		return "", false, nil
	}
	if err != nil {
		return "", false, t.s.wrap(err)
	}
	return v, true, nil
}

func getJSON[V any](t *tx, key string) (V, bool, error) {
	var v V
	found, err := t.GetJSON(key, &v)
	return v, found, err
}

// GetJSON WATCHes and reads key, decoding its value into v (txstore.KV).
func (t *tx) GetJSON(key string, v any) (bool, error) {
	raw, found, err := t.watchGet(key)
	if err != nil || !found {
		return false, err
	}
	if err := json.Unmarshal([]byte(raw), v); err != nil {
		return false, fmt.Errorf("%w: registry/redis: corrupt %q: %v", registry.ErrBackend, key, err)
	}
	return true, nil
}

func (t *tx) set(key string, v *string) error {
	if !t.writable {
		return fmt.Errorf("%w: registry/redis: write in a read-only transaction", registry.ErrBackend)
	}
	if _, ok := t.strings[key]; !ok {
		t.order = append(t.order, key)
	}
	t.strings[key] = v
	return nil
}

// PutJSON buffers v, JSON-encoded, as key's value (txstore.KV).
func (t *tx) PutJSON(key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("registry/redis: encode: %w", err)
	}
	s := string(raw)
	return t.set(key, &s)
}

func (t *tx) LeaseByRequest(owner, requestID string) (string, bool, error) {
	return t.watchGet(t.s.keys.request(owner, requestID))
}
func (t *tx) PutRequest(owner, requestID, leaseID string) error {
	return t.set(t.s.keys.request(owner, requestID), &leaseID)
}

func (t *tx) LeaseByDigest(d string) (string, bool, error) { return t.watchGet(t.s.keys.digest(d)) }
func (t *tx) PutDigest(d, leaseID string) error            { return t.set(t.s.keys.digest(d), &leaseID) }

// Policies reads the policy hash (WATCHed as a whole: any policy write
// conflicts with every step that matched a policy).
func (t *tx) Policies() ([]fencegate.Policy, error) {
	key := t.s.keys.policies()
	var all *goredis.MapStringStringCmd
	_, err := t.rtx.Pipelined(t.ctx, func(p goredis.Pipeliner) error {
		p.Do(t.ctx, "watch", key)
		all = p.HGetAll(t.ctx, key)
		return nil
	})
	if err != nil {
		return nil, t.s.wrap(err)
	}
	merged := map[string]fencegate.Policy{}
	for pattern, raw := range all.Val() {
		var p fencegate.Policy
		if err := json.Unmarshal([]byte(raw), &p); err != nil {
			return nil, fmt.Errorf("%w: registry/redis: corrupt policy %q: %v", registry.ErrBackend, pattern, err)
		}
		merged[pattern] = p
	}
	for pattern, p := range t.policies {
		merged[pattern] = p
	}
	out := make([]fencegate.Policy, 0, len(merged))
	for _, p := range merged {
		out = append(out, p)
	}
	return out, nil
}

func (t *tx) PutPolicy(p fencegate.Policy) error {
	if !t.writable {
		return fmt.Errorf("%w: registry/redis: write in a read-only transaction", registry.ErrBackend)
	}
	t.policies[p.Pattern] = p
	return nil
}

// EachLease walks the lease keys with SCAN, from where the previous walk
// of this Store stopped (wrapping around once), examining at most
// ScanLimit leases: then it returns without error, and the next walk
// continues there. A walk that reaches its limit inside a SCAN reply
// leaves the cursor at that reply, and the next walk skips the keys of it
// this one examined: a reply's keys past the limit are examined next time,
// not a whole cycle later. Each lease passed to fn was read with a
// WATCHed GET, so a compaction deleting it fails and retries if it
// changed since. A lease created during the walk may be missed; it is
// young and not compactable anyway.
func (t *tx) EachLease(fn func(registry.LeaseRecord) error) error {
	seen := map[string]bool{}
	start := t.s.cursor
	cursor, wrapped := start, start == 0
	examined := t.s.examined // of the reply at start only
	for len(seen) < t.s.scanLimit {
		keys, next, err := t.rtx.Scan(t.ctx, cursor, t.s.keys.leasePattern(), int64(t.s.scanBatch)).Result()
		if err != nil {
			return t.s.wrap(err)
		}
		full, err := t.examine(keys, seen, examined, fn)
		if err != nil {
			return err // the batch is scanned again next time
		}
		if !full {
			if t.writable { // only an Update holds the shell exclusively
				t.s.cursor, t.s.examined = cursor, union(examined, keys, seen)
			}
			return nil
		}
		examined = nil
		if t.writable {
			t.s.cursor, t.s.examined = next, nil
		}
		cursor = next
		if cursor == 0 {
			if wrapped {
				return nil
			}
			wrapped = true
		}
	}
	return nil
}

// examine hands the leases of a SCAN reply to fn, up to the walk's limit,
// skipping the keys seen in this walk or examined in the last one; full
// reports whether it got through the whole reply.
func (t *tx) examine(keys []string, seen, examined map[string]bool, fn func(registry.LeaseRecord) error) (full bool, err error) {
	for _, key := range keys {
		if seen[key] || examined[key] {
			continue
		}
		if len(seen) >= t.s.scanLimit {
			return false, nil
		}
		seen[key] = true
		l, found, err := getJSON[registry.LeaseRecord](t, key)
		if err != nil {
			return false, err
		}
		if !found {
			continue // deleted since the SCAN
		}
		if err := fn(l); err != nil {
			return false, err
		}
	}
	return true, nil
}

// union is the keys of a reply examined by the last walk or this one.
func union(examined map[string]bool, keys []string, seen map[string]bool) map[string]bool {
	out := map[string]bool{}
	for _, k := range keys {
		if examined[k] || seen[k] {
			out[k] = true
		}
	}
	return out
}

// DeleteLease deletes a lease and its two index entries.
func (t *tx) DeleteLease(l registry.LeaseRecord) error {
	for _, key := range []string{t.s.keys.lease(l.Lease), t.s.keys.request(l.Owner, l.RequestID), t.s.keys.digest(l.Digest)} {
		if err := t.set(key, nil); err != nil {
			return err
		}
	}
	return nil
}

// flush queues the buffered writes in the step's MULTI.
func (t *tx) flush(p goredis.Pipeliner) error {
	for _, key := range t.order {
		if v := t.strings[key]; v != nil {
			p.Set(t.ctx, key, *v, 0)
		} else {
			p.Del(t.ctx, key)
		}
	}
	for _, sr := range t.indexed {
		p.ZAdd(t.ctx, t.s.keys.anchorIndex(sr[0]), goredis.Z{Member: sr[1]})
	}
	for pattern, pol := range t.policies {
		raw, err := json.Marshal(pol)
		if err != nil {
			return fmt.Errorf("registry/redis: encode: %w", err)
		}
		p.HSet(t.ctx, t.s.keys.policies(), pattern, string(raw))
	}
	return nil
}
