package redis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/store"
)

// Record implements store.Store.
func (s *Store) Record(ctx context.Context, resource string) (store.Record, error) {
	if err := store.ValidateResource(resource); err != nil {
		return store.Record{}, err
	}
	ctx, err := s.enter(ctx)
	if err != nil {
		return store.Record{}, err
	}
	expected, err := s.expect()
	if err != nil {
		return store.Record{}, err
	}
	var recCmd, genCmd *goredis.StringCmd
	if _, err := s.c.Pipelined(ctx, func(p goredis.Pipeliner) error {
		recCmd = p.Get(ctx, s.k.record(resource))
		genCmd = s.readGeneration(ctx, p, expected)
		return nil
	}); err != nil && !errors.Is(err, goredis.Nil) {
		return store.Record{}, wrap("record", err)
	}
	if err := s.confirmGeneration(genCmd, expected); err != nil {
		return store.Record{}, err
	}
	b, err := raw(recCmd, "record")
	if err != nil {
		return store.Record{}, err
	}
	rec, err := decodeRecord(b, resource)
	if err != nil {
		return store.Record{}, err
	}
	if !rec.Exists() {
		return store.Record{}, fmt.Errorf("store: record %q: %w", resource, store.ErrNotFound)
	}
	return rec, nil
}

// Receipt implements store.Store.
func (s *Store) Receipt(ctx context.Context, key store.ReceiptKey) (store.Receipt, error) {
	if err := key.Validate(); err != nil {
		return store.Receipt{}, err
	}
	ctx, err := s.enter(ctx)
	if err != nil {
		return store.Receipt{}, err
	}
	b, err := raw(s.c.Get(ctx, s.k.receipt(key)), "receipt")
	if err != nil {
		return store.Receipt{}, err
	}
	rc, err := decodeReceipt(b, key)
	if err != nil {
		return store.Receipt{}, err
	}
	if rc == nil {
		return store.Receipt{}, fmt.Errorf("store: receipt %q fence %d seq %d: %w", key.Resource, key.Fence, key.Seq, store.ErrNotFound)
	}
	return *rc, nil
}

// ReceiptsByOperation implements store.Store. It reads the operation's
// index, then the receipts it names; a receipt compacted in between is left
// out.
func (s *Store) ReceiptsByOperation(ctx context.Context, resource, operationID string) ([]store.Receipt, error) {
	if err := store.ValidateResource(resource); err != nil {
		return nil, err
	}
	if err := store.ValidateOperationID(operationID); err != nil {
		return nil, err
	}
	ctx, err := s.enter(ctx)
	if err != nil {
		return nil, err
	}
	seq, _ := strconv.ParseUint(operationID[strings.LastIndexByte(operationID, '/')+1:], 10, 64)
	members, err := s.c.SMembers(ctx, s.k.ops(resource, operationID)).Result()
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
	slices.Sort(fences)
	rkeys := make([]store.ReceiptKey, len(fences))
	for i, f := range fences {
		rkeys[i] = store.ReceiptKey{Resource: resource, Fence: f, Seq: seq}
	}
	rcs, err := s.getReceipts(ctx, rkeys)
	if err != nil {
		return nil, err
	}
	var out []store.Receipt
	for _, rc := range rcs {
		if rc != nil {
			if rc.OperationID != operationID {
				return nil, fmt.Errorf("store/redis: operation index of %s names receipt of %s: %w", operationID, rc.OperationID, store.ErrCorrupt)
			}
			out = append(out, *rc)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("store: receipts of %q op %s: %w", resource, operationID, store.ErrNotFound)
	}
	return out, nil
}

// getReceipts reads receipts in one pipeline; nil for those absent.
func (s *Store) getReceipts(ctx context.Context, ks []store.ReceiptKey) ([]*store.Receipt, error) {
	if len(ks) == 0 {
		return nil, nil
	}
	cmds := make([]*goredis.StringCmd, len(ks))
	_, err := s.c.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, k := range ks {
			cmds[i] = p.Get(ctx, s.k.receipt(k))
		}
		return nil
	})
	if err != nil && !errors.Is(err, goredis.Nil) {
		return nil, wrap("read receipts", err)
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

// indexedRecords reads the records of the resources in a global index, by
// resource; a record that has left the index since is still returned (the
// caller filters).
func (s *Store) indexedRecords(ctx context.Context, index, op string) ([]store.Record, error) {
	resources, err := s.c.SMembers(ctx, index).Result()
	if err != nil {
		return nil, wrap(op, err)
	}
	slices.Sort(resources)
	return s.recordsOf(ctx, resources, op)
}

// Records implements store.Store. It reads the names of every resource with
// a record (P:res, a set: O(resources) a page), sorts them and reads the
// page's records in one pipeline with the generation marker.
func (s *Store) Records(ctx context.Context, q store.RecordsQuery) ([]store.Record, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	ctx, err := s.enter(ctx)
	if err != nil {
		return nil, err
	}
	resources, err := s.c.SMembers(ctx, s.k.all()).Result()
	if err != nil {
		return nil, wrap("records", err)
	}
	slices.Sort(resources)
	i, found := slices.BinarySearch(resources, q.After)
	if found {
		i++
	}
	resources = resources[i:min(len(resources), i+q.Limit)]
	out, err := s.recordsOf(ctx, resources, "records")
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []store.Record{}
	}
	return out, nil
}

// recordsOf reads the records of resources in one pipeline, with the
// generation marker when checks are on; each must exist.
func (s *Store) recordsOf(ctx context.Context, resources []string, op string) ([]store.Record, error) {
	if len(resources) == 0 {
		return nil, nil
	}
	expected, err := s.expect()
	if err != nil {
		return nil, err
	}
	var genCmd *goredis.StringCmd
	cmds := make([]*goredis.StringCmd, len(resources))
	_, err = s.c.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, r := range resources {
			cmds[i] = p.Get(ctx, s.k.record(r))
		}
		genCmd = s.readGeneration(ctx, p, expected)
		return nil
	})
	if err != nil && !errors.Is(err, goredis.Nil) {
		return nil, wrap(op, err)
	}
	if err := s.confirmGeneration(genCmd, expected); err != nil {
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

// ListUnknown implements store.Store.
func (s *Store) ListUnknown(ctx context.Context, now time.Time) ([]store.Mutation, error) {
	ctx, err := s.enter(ctx)
	if err != nil {
		return nil, err
	}
	if now, err = s.now(ctx, now); err != nil {
		return nil, err
	}
	recs, err := s.indexedRecords(ctx, s.k.unknown(), "list unknown")
	if err != nil {
		return nil, err
	}
	var out []store.Mutation
	for _, r := range recs {
		if r.InFlight.Unsettled(now) {
			out = append(out, *r.InFlight)
		}
	}
	return out, nil
}

// ListPaused implements store.Store.
func (s *Store) ListPaused(ctx context.Context) ([]store.Record, error) {
	ctx, err := s.enter(ctx)
	if err != nil {
		return nil, err
	}
	recs, err := s.indexedRecords(ctx, s.k.paused(), "list paused")
	if err != nil {
		return nil, err
	}
	var out []store.Record
	for _, r := range recs {
		if r.Pause != nil {
			out = append(out, r)
		}
	}
	return out, nil
}

// ListQuarantined implements store.Store.
func (s *Store) ListQuarantined(ctx context.Context, resource string) ([]store.Quarantine, error) {
	if resource != "" {
		if err := store.ValidateResource(resource); err != nil {
			return nil, err
		}
	}
	ctx, err := s.enter(ctx)
	if err != nil {
		return nil, err
	}
	resources := []string{resource}
	if resource == "" {
		if resources, err = s.c.SMembers(ctx, s.k.quarantined()).Result(); err != nil {
			return nil, wrap("list quarantined", err)
		}
	}
	byRes, err := s.quarantineOf(ctx, resources)
	if err != nil {
		return nil, err
	}
	var out []store.Quarantine
	for _, qs := range byRes {
		out = append(out, qs...)
	}
	slices.SortFunc(out, func(a, b store.Quarantine) int {
		return cmp.Or(strings.Compare(a.Resource, b.Resource), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

// quarantineOf reads the quarantine entries of resources in one pipeline.
func (s *Store) quarantineOf(ctx context.Context, resources []string) ([][]store.Quarantine, error) {
	if len(resources) == 0 {
		return nil, nil
	}
	cmds := make([]*goredis.MapStringStringCmd, len(resources))
	_, err := s.c.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, r := range resources {
			cmds[i] = p.HGetAll(ctx, s.k.quarantine(r))
		}
		return nil
	})
	if err != nil {
		return nil, wrap("read quarantine", err)
	}
	out := make([][]store.Quarantine, len(resources))
	for i, c := range cmds {
		for id, v := range c.Val() {
			q, err := decodeQuarantine([]byte(v), resources[i], id)
			if err != nil {
				return nil, err
			}
			out[i] = append(out[i], q)
		}
	}
	return out, nil
}
