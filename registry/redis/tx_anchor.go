package redis

import (
	"encoding/json"
	"errors"
	"fmt"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/registry"
)

// The anchors of fenced stores in Redis (registry/anchor.go): a store's
// record and ledger under {prefix}:store:<name> and {prefix}:ledger:<name>,
// each anchored resource under {prefix}:anc:<store>:<resource>, and a
// sorted set {prefix}:ancidx:<store> of the store's resources for paging
// and counting.
//
// An anchor step WATCHes the keys it decides on (the store's record, the
// policies and the anchors of its batch), and nothing else: it reads the
// lineage from the meta without WATCHing it (the lineage never changes
// once set), and writes no meta and no revision. So anchor steps of one
// store conflict only with each other on the same resources, with the
// rare writes of the store's record (registration, acknowledgement, a
// loss) and with policy changes, never with lease writes, and lease writes
// never with them. The meta read still goes
// through the watermark check: a rolled-back Redis is recovered before an
// anchor step decides (watermark.go). Anchor writes do not move the
// watermark (no revision), so a rollback that lost only anchor writes is
// not seen by it; what a sidecar's store holds then still covers the older
// anchor, and the anchors catch up with the next steps (design, "The
// store's anchor").

// Lineage reads the meta's lineage without WATCHing the meta, checked
// against the watermark like every meta read.
func (t *tx) Lineage() (string, error) {
	m, err := t.CheckedMeta(func() (registry.Meta, bool, error) {
		var m registry.Meta
		raw, err := t.rtx.Get(t.ctx, t.s.keys.meta()).Result()
		switch {
		case errors.Is(err, goredis.Nil):
			return m, false, nil
		case err != nil:
			return m, false, t.s.wrap(err)
		}
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			return m, true, fmt.Errorf("%w: registry/redis: corrupt meta: %v", registry.ErrBackend, err)
		}
		return m, true, nil
	})
	if err != nil {
		return "", err
	}
	return m.Lineage, nil
}

// StoreRecord, PutStoreRecord, Ledger and PutLedger are the Records'
// (txstore), WATCHed like every read of a decision.

// Anchors WATCHes and reads the anchors of resources in one round trip
// (WATCH first, then MGET), after the step's own buffered writes.
func (t *tx) Anchors(store string, resources []string) (map[string]fencegate.Progress, error) {
	out := make(map[string]fencegate.Progress, len(resources))
	var keys, names []string
	for _, r := range resources {
		key := t.s.keys.anchor(store, r)
		if v, ok := t.strings[key]; ok {
			if v != nil {
				p, err := decodeProgress(key, *v)
				if err != nil {
					return nil, err
				}
				out[r] = p
			}
			continue
		}
		keys, names = append(keys, key), append(names, r)
	}
	if len(keys) == 0 {
		return out, nil
	}
	var get *goredis.SliceCmd
	_, err := t.rtx.Pipelined(t.ctx, func(p goredis.Pipeliner) error {
		args := make([]any, 0, len(keys)+1)
		args = append(args, "watch")
		for _, k := range keys {
			args = append(args, k)
		}
		p.Do(t.ctx, args...)
		get = p.MGet(t.ctx, keys...)
		return nil
	})
	if err != nil {
		return nil, t.s.wrap(err)
	}
	vals, err := get.Result()
	if err != nil {
		return nil, t.s.wrap(err)
	}
	for i, v := range vals {
		if v == nil {
			continue
		}
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("%w: registry/redis: anchor %q is a %T", registry.ErrBackend, keys[i], v)
		}
		p, err := decodeProgress(keys[i], s)
		if err != nil {
			return nil, err
		}
		out[names[i]] = p
	}
	return out, nil
}

func decodeProgress(key, raw string) (fencegate.Progress, error) {
	var p fencegate.Progress
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return p, fmt.Errorf("%w: registry/redis: corrupt anchor %q: %v", registry.ErrBackend, key, err)
	}
	return p, nil
}

func (t *tx) PutAnchor(a registry.AnchorRecord) error {
	if err := t.PutJSON(t.s.keys.anchor(a.Store, a.Resource), a.Progress); err != nil {
		return err
	}
	t.indexed = append(t.indexed, [2]string{a.Store, a.Resource})
	return nil
}

// AnchorsAfter pages the store's index (ZRANGE BYLEX) and reads the
// anchors it names (MGET), neither WATCHed: a listing.
func (t *tx) AnchorsAfter(store, after string, limit int) ([]fencegate.ResourceAnchor, error) {
	if limit <= 0 {
		return nil, nil
	}
	min := "-"
	if after != "" {
		min = "(" + after
	}
	names, err := t.rtx.ZRangeArgs(t.ctx, goredis.ZRangeArgs{Key: t.s.keys.anchorIndex(store), Start: min, Stop: "+", ByLex: true, Count: int64(limit)}).Result()
	if err != nil {
		return nil, t.s.wrap(err)
	}
	if len(names) == 0 {
		return nil, nil
	}
	keys := make([]string, len(names))
	for i, r := range names {
		keys[i] = t.s.keys.anchor(store, r)
	}
	vals, err := t.rtx.MGet(t.ctx, keys...).Result()
	if err != nil {
		return nil, t.s.wrap(err)
	}
	out := make([]fencegate.ResourceAnchor, 0, len(names))
	for i, v := range vals {
		s, ok := v.(string)
		if !ok {
			continue // indexed, value not there (cannot happen: both are written in one MULTI)
		}
		p, err := decodeProgress(keys[i], s)
		if err != nil {
			return nil, err
		}
		out = append(out, fencegate.ResourceAnchor{Resource: names[i], Anchored: p})
	}
	return out, nil
}

// AnchorCount is the cardinality of the store's index (not WATCHed).
func (t *tx) AnchorCount(store string) (uint64, error) {
	n, err := t.rtx.ZCard(t.ctx, t.s.keys.anchorIndex(store)).Result()
	if err != nil {
		return 0, t.s.wrap(err)
	}
	return uint64(n), nil
}
