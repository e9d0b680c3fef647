package redis

import (
	"context"
	"slices"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/store"
)

// Enforcements implements store.Store.
func (s *Store) Enforcements(ctx context.Context) ([]store.Enforcement, error) {
	ctx, err := s.enter(ctx)
	if err != nil {
		return nil, err
	}
	m, err := s.c.HGetAll(ctx, s.k.enforcement()).Result()
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
	slices.SortFunc(out, func(a, b store.Enforcement) int { return strings.Compare(a.Shape, b.Shape) })
	return out, nil
}

// RecordEnforcement implements store.Store. The ledger is one hash; a
// write to any shape makes a concurrent write to another retry.
func (s *Store) RecordEnforcement(ctx context.Context, in store.EnforcementInput) (store.Enforcement, error) {
	if err := in.Validate(); err != nil {
		return store.Enforcement{}, err
	}
	ctx, err := s.enter(ctx)
	if err != nil {
		return store.Enforcement{}, err
	}
	key := s.k.enforcement()
	var out store.Enforcement
	err = s.optimistic(ctx, "record enforcement", func(tx *goredis.Tx) error {
		var get *goredis.StringCmd
		var timeCmd *goredis.TimeCmd
		_, err := tx.Pipelined(ctx, func(p goredis.Pipeliner) error {
			p.Do(ctx, "watch", key)
			get = p.HGet(ctx, key, in.Shape)
			timeCmd = s.readTime(ctx, p)
			return nil
		})
		if err != nil && !errorsIsNil(err) {
			return unwatch(ctx, tx, final{wrap("read enforcement", err)})
		}
		b, err := raw(get, "read enforcement")
		if err != nil {
			return unwatch(ctx, tx, final{err})
		}
		var cur *store.Enforcement
		if b != nil {
			var e store.Enforcement
			if err := decode(b, "enforcement of "+in.Shape, &e); err != nil {
				return unwatch(ctx, tx, final{err})
			}
			cur = &e
		}
		srv, err := serverTime(timeCmd)
		if err != nil {
			return unwatch(ctx, tx, final{err})
		}
		in := in
		in.Now = at(in.Now, srv)
		next, ch, err := store.DecideEnforcement(cur, in)
		changed := ch.Writes()
		if err != nil {
			return unwatch(ctx, tx, final{err})
		}
		out = next
		if !changed {
			return unwatch(ctx, tx, nil)
		}
		nb, err := encode(next)
		if err != nil {
			return unwatch(ctx, tx, final{err})
		}
		_, err = tx.TxPipelined(ctx, func(p goredis.Pipeliner) error {
			p.HSet(ctx, key, in.Shape, nb)
			p.IncrBy(ctx, s.k.bytes(), int64(len(nb)-len(b)))
			return nil
		})
		if err == nil {
			err = s.replicated(ctx, tx)
		}
		return err
	})
	if err != nil {
		return store.Enforcement{}, err
	}
	return out, nil
}
