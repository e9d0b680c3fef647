package redis

import (
	"context"
	"slices"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/store"
)

// decodeTrust decodes the trust pins hash (kid → JSON store.TrustedKey),
// by kid, and the total length of its values.
func decodeTrust(m map[string]string) ([]store.TrustedKey, int, error) {
	out := make([]store.TrustedKey, 0, len(m))
	n := 0
	for kid, v := range m {
		var p store.TrustedKey
		if err := decode([]byte(v), "trust pin "+kid, &p); err != nil {
			return nil, 0, err
		}
		if p.Kid != kid {
			return nil, 0, decodeMismatch("trust pin", kid, p.Kid)
		}
		out = append(out, p)
		n += len(v)
	}
	slices.SortFunc(out, func(a, b store.TrustedKey) int { return strings.Compare(a.Kid, b.Kid) })
	return out, n, nil
}

// TrustedKeys implements store.Store.
func (s *Store) TrustedKeys(ctx context.Context) ([]store.TrustedKey, error) {
	ctx, err := s.enter(ctx)
	if err != nil {
		return nil, err
	}
	m, err := s.c.HGetAll(ctx, s.k.trust()).Result()
	if err != nil {
		return nil, wrap("trusted keys", err)
	}
	out, _, err := decodeTrust(m)
	return out, err
}

// RecordTrust implements store.Store. The pins are one hash, WATCHed as a
// whole and replaced in one MULTI/EXEC; a change that changes nothing
// writes nothing.
func (s *Store) RecordTrust(ctx context.Context, in store.TrustInput) ([]store.TrustedKey, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	ctx, err := s.enter(ctx)
	if err != nil {
		return nil, err
	}
	key := s.k.trust()
	var out []store.TrustedKey
	err = s.optimistic(ctx, "record trust", func(tx *goredis.Tx) error {
		var all *goredis.MapStringStringCmd
		var timeCmd *goredis.TimeCmd
		_, err := tx.Pipelined(ctx, func(p goredis.Pipeliner) error {
			p.Do(ctx, "watch", key)
			all = p.HGetAll(ctx, key)
			timeCmd = s.readTime(ctx, p)
			return nil
		})
		if err != nil {
			return unwatch(ctx, tx, final{wrap("read trust", err)})
		}
		cur, curLen, err := decodeTrust(all.Val())
		if err != nil {
			return unwatch(ctx, tx, final{err})
		}
		srv, err := serverTime(timeCmd)
		if err != nil {
			return unwatch(ctx, tx, final{err})
		}
		in := in
		in.Now = at(in.Now, srv)
		next, ch, err := store.DecideTrust(cur, in)
		changed := ch.Writes()
		if err != nil {
			return unwatch(ctx, tx, final{err})
		}
		out = next
		if !changed {
			return unwatch(ctx, tx, nil)
		}
		vals := make([]any, 0, 2*len(next))
		n := 0
		for _, p := range next {
			b, err := encode(p)
			if err != nil {
				return unwatch(ctx, tx, final{err})
			}
			vals = append(vals, p.Kid, b)
			n += len(b)
		}
		_, err = tx.TxPipelined(ctx, func(p goredis.Pipeliner) error {
			p.Del(ctx, key)
			if len(vals) > 0 {
				p.HSet(ctx, key, vals...)
			}
			p.IncrBy(ctx, s.k.bytes(), int64(n-curLen))
			return nil
		})
		if err == nil {
			err = s.replicated(ctx, tx)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
