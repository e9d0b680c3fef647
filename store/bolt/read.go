package bolt

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/bbolt"

	"github.com/fencegate/fencegate/store"
)

// Record implements store.Store.
func (s *Store) Record(ctx context.Context, resource string) (store.Record, error) {
	if err := store.ValidateResource(resource); err != nil {
		return store.Record{}, err
	}
	var rec store.Record
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var err error
		rec, err = loadRecord(tx, resource)
		return err
	})
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
	var rc *store.Receipt
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var err error
		rc, err = loadReceipt(tx, key)
		return err
	})
	if err != nil {
		return store.Receipt{}, err
	}
	if rc == nil {
		return store.Receipt{}, fmt.Errorf("store: receipt %q fence %d seq %d: %w", key.Resource, key.Fence, key.Seq, store.ErrNotFound)
	}
	return *rc, nil
}

// ReceiptsByOperation implements store.Store.
func (s *Store) ReceiptsByOperation(ctx context.Context, resource, operationID string) ([]store.Receipt, error) {
	if err := store.ValidateResource(resource); err != nil {
		return nil, err
	}
	if err := store.ValidateOperationID(operationID); err != nil {
		return nil, err
	}
	seq, _ := strconv.ParseUint(operationID[strings.LastIndexByte(operationID, '/')+1:], 10, 64)
	var out []store.Receipt
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		out = nil
		prefix := opPrefix(resource, operationID)
		c := tx.Bucket(bucketOps).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			rest := k[len(prefix):]
			if len(rest) != 8 {
				return fmt.Errorf("store: bolt: op index key %q: %w", k, store.ErrCorrupt)
			}
			fence := uint64(0)
			for _, b := range rest {
				fence = fence<<8 | uint64(b)
			}
			rc, err := loadReceipt(tx, store.ReceiptKey{Resource: resource, Fence: fence, Seq: seq})
			if err != nil {
				return err
			}
			if rc == nil {
				return fmt.Errorf("store: bolt: op index %q names a missing receipt: %w", k, store.ErrCorrupt)
			}
			out = append(out, *rc)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("store: receipts of %q op %s: %w", resource, operationID, store.ErrNotFound)
	}
	return out, nil
}

// ListUnknown implements store.Store.
func (s *Store) ListUnknown(ctx context.Context, now time.Time) ([]store.Mutation, error) {
	var out []store.Mutation
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		out = nil
		return tx.Bucket(bucketInFlight).ForEach(func(k, _ []byte) error {
			rec, err := loadRecord(tx, string(k))
			if err != nil {
				return err
			}
			if rec.InFlight == nil {
				return fmt.Errorf("store: bolt: in-flight index names %q without a marker: %w", k, store.ErrCorrupt)
			}
			if rec.InFlight.Unsettled(now) {
				out = append(out, *rec.InFlight)
			}
			return nil
		})
	})
	return out, err
}

// ListPaused implements store.Store.
func (s *Store) ListPaused(ctx context.Context) ([]store.Record, error) {
	var out []store.Record
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		out = nil
		return tx.Bucket(bucketPaused).ForEach(func(k, _ []byte) error {
			rec, err := loadRecord(tx, string(k))
			if err != nil {
				return err
			}
			if rec.Pause == nil {
				return fmt.Errorf("store: bolt: paused index names %q without a pause: %w", k, store.ErrCorrupt)
			}
			out = append(out, rec)
			return nil
		})
	})
	return out, err
}

// ListQuarantined implements store.Store.
func (s *Store) ListQuarantined(ctx context.Context, resource string) ([]store.Quarantine, error) {
	var prefix []byte
	if resource != "" {
		if err := store.ValidateResource(resource); err != nil {
			return nil, err
		}
		prefix = quarantinePrefix(resource)
	}
	var out []store.Quarantine
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		out = nil
		b := tx.Bucket(bucketQuarantine)
		c := b.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			var q store.Quarantine
			if _, err := get(b, k, &q); err != nil {
				return err
			}
			out = append(out, q)
		}
		return nil
	})
	return out, err
}

// Records implements store.Store: a cursor over the records bucket, whose
// byte order is resource order, in one read-only transaction.
func (s *Store) Records(ctx context.Context, q store.RecordsQuery) ([]store.Record, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	var out []store.Record
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		out = make([]store.Record, 0, min(q.Limit, 64))
		c := tx.Bucket(bucketRecords).Cursor()
		k, _ := c.Seek([]byte(q.After))
		if k != nil && q.After != "" && string(k) == q.After {
			k, _ = c.Next()
		}
		for ; k != nil && len(out) < q.Limit; k, _ = c.Next() {
			rec, err := loadRecord(tx, string(k))
			if err != nil {
				return err
			}
			out = append(out, rec)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Generation implements store.Store: the ID in the meta bucket, written
// when the file was created (or first opened by a version that keeps it).
func (s *Store) Generation(ctx context.Context) (string, error) {
	var g string
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		g = string(tx.Bucket(bucketMeta).Get(keyGeneration))
		if err := store.ValidateGeneration(g); err != nil {
			return fmt.Errorf("store: bolt: file generation %q: %v: %w", g, err, store.ErrCorrupt)
		}
		return nil
	})
	return g, err
}
