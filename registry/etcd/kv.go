package etcd

import (
	"context"
	"errors"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// maxReadOps bounds the reads of one batched range transaction (etcd's
// default --max-txn-ops is 128).
const maxReadOps = 128

// kv is the optimistic transaction under a tx: reads at one etcd revision
// (the first read's, made linearizable; every later read is linearizable
// too, at that revision, so any member serves it once it applied it),
// each key's mod revision recorded (0 for an absent key); writes buffered
// in order; commit puts them in one etcd transaction that compares the
// mod revision of every key read, and writes nothing when one changed.
type kv struct {
	ctx context.Context
	c   *clientv3.Client
	rev int64
	// reads holds each key read: its value and mod revision (absent: nil
	// value, revision 0).
	reads map[string]readKey
	// listed holds keys read by rangeAt: not compared at commit unless
	// track moves them into reads.
	listed map[string]readKey
	// writes holds each key written: its value (nil deletes it); order is
	// the order keys were first written.
	writes map[string]*string
	order  []string
}

type readKey struct {
	val *string
	rev int64
}

func newKV(ctx context.Context, c *clientv3.Client) *kv {
	return &kv{ctx: ctx, c: c, reads: map[string]readKey{}, listed: map[string]readKey{}, writes: map[string]*string{}}
}

// value is key as the transaction sees it: its own write, else what it
// read (ok false when key was neither written nor read).
func (x *kv) value(key string) (v *string, ok bool) {
	if w, written := x.writes[key]; written {
		return w, true
	}
	r, read := x.reads[key]
	return r.val, read
}

// fetch reads the keys not yet read or written, in batches of at most
// maxReadOps gets per round trip.
func (x *kv) fetch(keys ...string) error {
	var need []string
	for _, k := range keys {
		if _, ok := x.value(k); !ok {
			need = append(need, k)
		}
	}
	for len(need) > 0 {
		n := min(len(need), maxReadOps)
		if err := x.fetchBatch(need[:n]); err != nil {
			return err
		}
		need = need[n:]
	}
	return nil
}

func (x *kv) fetchBatch(keys []string) error {
	ops := make([]clientv3.Op, len(keys))
	for i, k := range keys {
		if x.rev == 0 {
			ops[i] = clientv3.OpGet(k)
		} else {
			ops[i] = clientv3.OpGet(k, clientv3.WithRev(x.rev))
		}
	}
	resp, err := x.c.Txn(x.ctx).Then(ops...).Commit()
	if err != nil {
		return err
	}
	if x.rev == 0 {
		x.rev = resp.Header.Revision
	}
	for i, r := range resp.Responses {
		rk := readKey{}
		if kvs := r.GetResponseRange().GetKvs(); len(kvs) == 1 {
			v := string(kvs[0].Value)
			rk = readKey{val: &v, rev: kvs[0].ModRevision}
		}
		x.reads[keys[i]] = rk
	}
	return nil
}

// get reads one key.
func (x *kv) get(key string) (*string, error) {
	if err := x.fetch(key); err != nil {
		return nil, err
	}
	v, _ := x.value(key)
	return v, nil
}

// rangeAt reads up to limit keys of [from, end) at the transaction's
// revision (fixing it, when this is the first read), without comparing
// them at commit: a compaction's walk, whose only keys that matter are the
// ones it deletes (track). more reports keys left in the range.
func (x *kv) rangeAt(from, end string, limit int) (kvs []*mvccpb.KeyValue, more bool, err error) {
	opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(int64(limit))}
	if x.rev != 0 {
		opts = append(opts, clientv3.WithRev(x.rev))
	}
	resp, err := x.c.Get(x.ctx, from, opts...)
	if err != nil {
		return nil, false, err
	}
	if x.rev == 0 {
		x.rev = resp.Header.Revision
	}
	for _, kv := range resp.Kvs {
		v := string(kv.Value)
		x.listed[string(kv.Key)] = readKey{val: &v, rev: kv.ModRevision}
	}
	return resp.Kvs, resp.More, nil
}

// track makes key compared at commit: a key rangeAt listed is compared
// with the mod revision listed, any other is read.
func (x *kv) track(key string) error {
	if _, ok := x.value(key); ok {
		return nil
	}
	if r, ok := x.listed[key]; ok {
		x.reads[key] = r
		return nil
	}
	return x.fetch(key)
}

// put buffers a write (nil deletes).
func (x *kv) put(key string, v *string) {
	if _, ok := x.writes[key]; !ok {
		x.order = append(x.order, key)
	}
	x.writes[key] = v
}

// commit sends the transaction: compares on every key read, the writes
// in order. It reports whether the comparisons held (false: nothing was
// written). A transaction that read nothing and writes nothing sends
// nothing.
func (x *kv) commit() (bool, error) {
	if len(x.reads) == 0 && len(x.order) == 0 {
		return true, nil
	}
	cmps := make([]clientv3.Cmp, 0, len(x.reads))
	for k, r := range x.reads {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(k), "=", r.rev))
	}
	ops := make([]clientv3.Op, 0, len(x.order))
	for _, k := range x.order {
		if v := x.writes[k]; v != nil {
			ops = append(ops, clientv3.OpPut(k, *v))
		} else {
			ops = append(ops, clientv3.OpDelete(k))
		}
	}
	resp, err := x.c.Txn(x.ctx).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return false, err
	}
	return resp.Succeeded, nil
}

// retryable reports a read that can only succeed on a fresh attempt: its
// revision was compacted away meanwhile.
func retryable(err error) bool { return errors.Is(err, rpctypes.ErrCompacted) }

// unavailable reports an error of etcd's (or of the connection to it)
// that says the cluster could not serve the request now: gRPC's
// Unavailable, which etcd uses for no leader, leader changed, server
// stopped and its request timeouts, and the client for a member it cannot
// reach. A commit so answered may or may not have applied.
func unavailable(err error) bool {
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return ee.Code() == codes.Unavailable
	}
	st, ok := status.FromError(err)
	return ok && st.Code() == codes.Unavailable
}
