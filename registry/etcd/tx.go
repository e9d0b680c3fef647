package etcd

import (
	"context"
	"encoding/json"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/internal/rollback"
	"github.com/fencegate/fencegate/registry/internal/txstore"
)

// tx is one attempt of a step: a registry.Tx over a kv (kv.go). A read
// records the key's mod revision for the commit's comparison and, after
// the first, is made at the first read's revision; writes are buffered,
// and a later read sees them.
type tx struct {
	// Records are the step's meta, resource, lease, store and ledger
	// records (registry/internal/txstore), over GetJSON and PutJSON.
	txstore.Records
	ctx      context.Context
	s        *Store
	kv       *kv
	writable bool
}

// newTx starts an attempt whose requests require a leader: a member that
// has none (cut off from the quorum, or in an election) answers at once
// with "no leader" (ErrUnavailable) instead of holding a linearizable read
// until its request timeout.
func newTx(ctx context.Context, s *Store, writable bool, seen rollback.State) *tx {
	ctx = clientv3.WithRequireLeader(ctx)
	t := &tx{ctx: ctx, s: s, kv: newKV(ctx, s.c), writable: writable}
	t.Records = txstore.NewRecords(t, &s.records, &s.wm, &seen)
	return t
}

// get reads key; found is false for an absent (or deleted in this step)
// key.
func (t *tx) get(key string) (string, bool, error) {
	v, err := t.kv.get(key)
	if err != nil {
		return "", false, t.s.wrap(err)
	}
	if v == nil {
		return "", false, nil
	}
	return *v, true, nil
}

// getMany reads keys in as few round trips as etcd allows; an absent key
// reads as "" (the registry never stores an empty value).
func (t *tx) getMany(keys []string) ([]string, error) {
	if err := t.kv.fetch(keys...); err != nil {
		return nil, t.s.wrap(err)
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		if v, _ := t.kv.value(k); v != nil {
			out[i] = *v
		}
	}
	return out, nil
}

func decode[V any](key, raw string) (V, error) {
	var v V
	err := decodeInto(key, raw, &v)
	return v, err
}

func decodeInto(key, raw string, v any) error {
	if err := json.Unmarshal([]byte(raw), v); err != nil {
		return fmt.Errorf("%w: registry/etcd: corrupt %q: %v", registry.ErrBackend, key, err)
	}
	return nil
}

// GetJSON decodes key's value into v (txstore.KV).
func (t *tx) GetJSON(key string, v any) (bool, error) {
	raw, found, err := t.get(key)
	if err != nil || !found {
		return false, err
	}
	err = decodeInto(key, raw, v)
	return err == nil, err
}

func (t *tx) put(key, val string) error {
	if !t.writable {
		return fmt.Errorf("%w: registry/etcd: write in a read-only transaction", registry.ErrBackend)
	}
	t.kv.put(key, &val)
	return nil
}

// PutJSON buffers v, JSON-encoded, as key's value (txstore.KV).
func (t *tx) PutJSON(key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("registry/etcd: encode: %w", err)
	}
	return t.put(key, string(raw))
}

func (t *tx) del(key string) error {
	if !t.writable {
		return fmt.Errorf("%w: registry/etcd: write in a read-only transaction", registry.ErrBackend)
	}
	t.kv.put(key, nil)
	return nil
}

func (t *tx) LeaseByRequest(owner, requestID string) (string, bool, error) {
	return t.get(t.s.keys.request(owner, requestID))
}

func (t *tx) PutRequest(owner, requestID, leaseID string) error {
	return t.put(t.s.keys.request(owner, requestID), leaseID)
}

func (t *tx) LeaseByDigest(d string) (string, bool, error) {
	return t.get(t.s.keys.digest(d))
}

func (t *tx) PutDigest(d, leaseID string) error { return t.put(t.s.keys.digest(d), leaseID) }

// Policies reads the one policies key, then the step's own writes over it.
func (t *tx) Policies() ([]fencegate.Policy, error) {
	key := t.s.keys.policies()
	merged := map[string]fencegate.Policy{}
	raw, found, err := t.get(key)
	if err != nil {
		return nil, err
	}
	if found {
		if merged, err = decode[map[string]fencegate.Policy](key, raw); err != nil {
			return nil, err
		}
	}
	out := make([]fencegate.Policy, 0, len(merged))
	for _, p := range merged {
		out = append(out, p)
	}
	return out, nil
}

// PutPolicy rewrites the policies key with p: the key is read first, so
// a concurrent policy write conflicts.
func (t *tx) PutPolicy(p fencegate.Policy) error {
	ps, err := t.Policies()
	if err != nil {
		return err
	}
	all := make(map[string]fencegate.Policy, len(ps)+1)
	for _, q := range ps {
		all[q.Pattern] = q
	}
	all[p.Pattern] = p
	return t.PutJSON(t.s.keys.policies(), all)
}

// EachLease walks the lease keys in key order, from after where the
// previous walk of this Store stopped (wrapping around once), examining
// at most ScanLimit leases, in range reads at the step's revision that
// are not compared at commit: only the leases the compaction deletes are
// (DeleteLease tracks them), so a lease changed since it was read is not
// deleted, and a walk over thousands of leases does not make a commit of
// thousands of comparisons. A lease created during the walk may be missed;
// it is young and not compactable anyway.
func (t *tx) EachLease(fn func(registry.LeaseRecord) error) error {
	prefix := t.s.keys.leases()
	segments := [][2]string{{prefix, clientv3.GetPrefixRangeEnd(prefix)}}
	if c := t.s.cursor; c != "" {
		segments = [][2]string{{c + "\x00", segments[0][1]}, {prefix, c + "\x00"}}
	}
	left := t.s.scanLimit
	for _, seg := range segments {
		var err error
		if left, err = t.walk(seg[0], seg[1], left, fn); err != nil || left == 0 {
			return err
		}
	}
	return nil
}

// walk hands the leases of [from, end) to fn, at most left of them, in
// pages; it returns how many more the walk may examine.
func (t *tx) walk(from, end string, left int, fn func(registry.LeaseRecord) error) (int, error) {
	const page = 256
	for left > 0 {
		kvs, more, err := t.kv.rangeAt(from, end, min(page, left))
		if err != nil {
			return 0, t.s.wrap(err)
		}
		for _, kv := range kvs {
			key := string(kv.Key)
			left--
			if t.writable {
				t.s.cursor = key // only an Update holds the shell exclusively
			}
			l, err := decode[registry.LeaseRecord](key, string(kv.Value))
			if err != nil {
				return 0, err
			}
			if err := fn(l); err != nil {
				return 0, err
			}
		}
		if !more || len(kvs) == 0 {
			return left, nil
		}
		from = string(kvs[len(kvs)-1].Key) + "\x00"
	}
	return 0, nil
}

// ListLeases walks every lease in pages of range reads, outside the
// transaction: a listing.
func (t *tx) ListLeases(fn func(registry.LeaseRecord) error) error {
	prefix := t.s.keys.leases()
	end := clientv3.GetPrefixRangeEnd(prefix)
	const page = 512
	for from := prefix; ; {
		resp, err := t.s.c.Get(t.ctx, from, clientv3.WithRange(end), clientv3.WithLimit(page))
		if err != nil {
			return t.s.wrap(err)
		}
		for _, kv := range resp.Kvs {
			l, err := decode[registry.LeaseRecord](string(kv.Key), string(kv.Value))
			if err != nil {
				return err
			}
			if err := fn(l); err != nil {
				return err
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// DeleteLease deletes a lease and its two index entries; the lease key is
// compared at commit (as EachLease read it, or read now), so a lease
// changed meanwhile is not deleted.
func (t *tx) DeleteLease(l registry.LeaseRecord) error {
	if err := t.kv.track(t.s.keys.lease(l.Lease)); err != nil {
		return t.s.wrap(err)
	}
	for _, key := range []string{t.s.keys.lease(l.Lease), t.s.keys.request(l.Owner, l.RequestID), t.s.keys.digest(l.Digest)} {
		if err := t.del(key); err != nil {
			return err
		}
	}
	return nil
}

// finish adds to the step's writes the wake-up key of every resource it
// ends: the other processes' watches see it exactly when the end commits
// (notify.go).
func (t *tx) finish() error {
	if !t.writable {
		return nil
	}
	for _, r := range t.Ended() {
		if err := t.put(t.s.keys.ended(r), t.s.origin); err != nil {
			return err
		}
	}
	return nil
}

// valueOf is the value of a one-key range read, for messages.
func valueOf(kvs []*mvccpb.KeyValue) string {
	if len(kvs) == 0 {
		return ""
	}
	return string(kvs[0].Value)
}
