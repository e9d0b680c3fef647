package etcd

import (
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/registry"
)

// The anchors of fenced stores in etcd (registry/anchor.go): a store's
// record and ledger under <prefix>/store/<name> and <prefix>/ledger/<name>,
// each anchored resource under <prefix>/anc/<store>:<resource>, so a
// store's anchors are one key range in resource (byte) order, for paging
// and counting.
//
// An anchor step reads through the STM (and so compares at commit) the
// keys it decides on: the store's record, the policies and the anchors of
// its batch. It reads the lineage from the meta outside the STM (the
// lineage never changes once set) and writes no meta, so anchor steps
// never conflict with lease writes, nor lease writes with them. That
// lineage read is still checked against the watermark.

// Lineage reads the meta's lineage with a linearizable read outside the
// transaction (no comparison at commit), checked against the watermark.
func (t *tx) Lineage() (string, error) {
	m, err := t.CheckedMeta(func() (registry.Meta, bool, error) {
		var m registry.Meta
		key := t.s.keys.meta()
		resp, err := t.s.c.Get(t.ctx, key)
		if err != nil {
			return m, false, t.s.wrap(err)
		}
		found := len(resp.Kvs) == 1
		if found {
			m, err = decode[registry.Meta](key, string(resp.Kvs[0].Value))
		}
		return m, found, err
	})
	if err != nil {
		return "", err
	}
	return m.Lineage, nil
}

// StoreRecord, PutStoreRecord, Ledger and PutLedger are the Records'
// (txstore), through the STM.

// Anchors reads the anchors of resources through the STM in one round
// trip (after the step's own writes).
func (t *tx) Anchors(store string, resources []string) (map[string]fencegate.Progress, error) {
	out := make(map[string]fencegate.Progress, len(resources))
	keys := make([]string, len(resources))
	for i, r := range resources {
		keys[i] = t.s.keys.anchor(store, r)
	}
	vals, err := t.getMany(keys)
	if err != nil {
		return nil, err
	}
	for i, raw := range vals {
		if raw == "" {
			continue
		}
		p, err := decode[fencegate.Progress](keys[i], raw)
		if err != nil {
			return nil, err
		}
		out[resources[i]] = p
	}
	return out, nil
}

func (t *tx) PutAnchor(a registry.AnchorRecord) error {
	return t.PutJSON(t.s.keys.anchor(a.Store, a.Resource), a.Progress)
}

// AnchorsAfter is one range read of the store's anchors after after,
// outside the transaction: a listing.
func (t *tx) AnchorsAfter(store, after string, limit int) ([]fencegate.ResourceAnchor, error) {
	if limit <= 0 {
		return nil, nil
	}
	prefix := t.s.keys.anchors(store)
	from := prefix
	if after != "" {
		from = prefix + after + "\x00"
	}
	resp, err := t.s.c.Get(t.ctx, from, clientv3.WithRange(clientv3.GetPrefixRangeEnd(prefix)), clientv3.WithLimit(int64(limit)))
	if err != nil {
		return nil, t.s.wrap(err)
	}
	out := make([]fencegate.ResourceAnchor, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		p, err := decode[fencegate.Progress](string(kv.Key), string(kv.Value))
		if err != nil {
			return nil, err
		}
		out = append(out, fencegate.ResourceAnchor{Resource: string(kv.Key)[len(prefix):], Anchored: p})
	}
	return out, nil
}

// AnchorCount counts the store's anchor keys (a count-only range read,
// outside the transaction).
func (t *tx) AnchorCount(store string) (uint64, error) {
	resp, err := t.s.c.Get(t.ctx, t.s.keys.anchors(store), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, t.s.wrap(err)
	}
	return uint64(resp.Count), nil
}
