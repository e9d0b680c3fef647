package redis

import (
	"encoding/json"
	"fmt"

	"github.com/fencegate/fencegate/registry"
)

// ListLeases walks every lease key with SCAN from the start and reads
// each batch with one MGET, without WATCH: a listing, not a decision's
// read (registry.Tx). A lease deleted between the SCAN and the MGET is
// left out; one written during the walk may be missed or shown.
func (t *tx) ListLeases(fn func(registry.LeaseRecord) error) error {
	seen := map[string]bool{}
	var cursor uint64
	for {
		keys, next, err := t.rtx.Scan(t.ctx, cursor, t.s.keys.leasePattern(), int64(t.s.scanBatch)).Result()
		if err != nil {
			return t.s.wrap(err)
		}
		if err := t.listBatch(keys, seen, fn); err != nil {
			return err
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// listBatch reads keys not seen yet and calls fn for each lease found.
func (t *tx) listBatch(keys []string, seen map[string]bool, fn func(registry.LeaseRecord) error) error {
	fresh := keys[:0:0]
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			fresh = append(fresh, k)
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	vals, err := t.rtx.MGet(t.ctx, fresh...).Result()
	if err != nil {
		return t.s.wrap(err)
	}
	for i, v := range vals {
		raw, ok := v.(string)
		if !ok {
			continue // deleted since the SCAN
		}
		var l registry.LeaseRecord
		if err := json.Unmarshal([]byte(raw), &l); err != nil {
			return fmt.Errorf("%w: registry/redis: corrupt %q: %v", registry.ErrBackend, fresh[i], err)
		}
		if err := fn(l); err != nil {
			return err
		}
	}
	return nil
}
