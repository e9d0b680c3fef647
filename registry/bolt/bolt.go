package bolt

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/internal/boltgroup"
	"github.com/fencegate/fencegate/registry"
)

// SchemaVersion is the on-disk format version: 2 stores the meta, the
// resources and the leases in the binary form of codec.go. A file of
// version 1 (all JSON) opens and is marked 2: its JSON records still
// decode and are rewritten in the binary form as they are written, and a
// build of version 1, which cannot read them, refuses the file.
const SchemaVersion = 2

// schemaJSON is the version of the files whose records are all JSON.
const schemaJSON = 1

var (
	bMeta      = []byte("meta")
	bResources = []byte("resources")
	bLeases    = []byte("leases")
	bRequests  = []byte("requests")
	bDigests   = []byte("digests")
	bPolicies  = []byte("policies")
	bStores    = []byte("stores")
	bLedgers   = []byte("ledgers")
	bAnchors   = []byte("anchors")
	bCounts    = []byte("anchorcounts")
	kMeta      = []byte("meta")
	kSchema    = []byte("schema")
)

// ErrSchema is returned when the file's schema version is not SchemaVersion.
var ErrSchema = errors.New("registry/bolt: unsupported schema version")

// MaxGroup caps the operations sharing one transaction.
const MaxGroup = 128

// Store is a bbolt-backed registry.TxStore.
type Store struct {
	db    *bbolt.DB
	group *boltgroup.Committer
}

// Open opens or creates the registry file at path. The file is locked:
// a second process opening it waits up to timeout, then fails.
func Open(path string, timeout time.Duration) (*Store, error) {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: timeout})
	if err != nil {
		return nil, fmt.Errorf("registry/bolt: open %s: %w", path, err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bMeta, bResources, bLeases, bRequests, bDigests, bPolicies, bStores, bLedgers, bAnchors, bCounts} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		mb := tx.Bucket(bMeta)
		v := mb.Get(kSchema)
		if v == nil {
			return mb.Put(kSchema, []byte(fmt.Sprint(SchemaVersion)))
		}
		if string(v) == fmt.Sprint(schemaJSON) {
			return mb.Put(kSchema, []byte(fmt.Sprint(SchemaVersion)))
		}
		if string(v) != fmt.Sprint(SchemaVersion) {
			return fmt.Errorf("%w: file has %s, this build reads %d", ErrSchema, v, SchemaVersion)
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("registry/bolt: %w", err)
	}
	return &Store{db: db, group: boltgroup.New(db, MaxGroup)}, nil
}

// OpenBackend opens path and returns it as a registry.Backend.
func OpenBackend(path string, timeout time.Duration) (registry.Backend, error) {
	s, err := Open(path, timeout)
	if err != nil {
		return nil, err
	}
	return registry.NewTxBackend(s), nil
}

// DB exposes the bbolt handle (for stats in benchmarks).
func (s *Store) DB() *bbolt.DB { return s.db }

// GroupStats are the writes and the write transactions the group
// committer committed so far (writes per transaction: how well operations
// share a transaction and its fsyncs).
func (s *Store) GroupStats() (writes, txs uint64) { return s.group.Stats() }

// Update runs fn in a read-write transaction, possibly shared with other
// operations (group commit), and returns once it is committed with fsync.
// fn may run more than once (boltgroup.Committer.Do); only the last run
// counts.
func (s *Store) Update(ctx context.Context, fn func(registry.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := s.group.Do(func(btx *bbolt.Tx) error {
		t := tx{t: btx, wrote: new(bool)}
		if err := fn(t); err != nil {
			if !*t.wrote {
				return boltgroup.NoWrite(err)
			}
			return err
		}
		return nil
	})
	if errors.Is(err, boltgroup.ErrClosed) {
		return registry.ErrClosed
	}
	return wrap(err)
}

// UpdateStaged is Update for a function that leaves work to do
// (registry.StagedTxStore): its Work runs in the caller's goroutine while
// the group's leader runs the other operations of the group
// (boltgroup.Committer.DoStaged), its Finish in the same transaction
// before the commit. The registry seals a grant there, so the signatures
// of a group are made in parallel and not one after another inside it.
func (s *Store) UpdateStaged(ctx context.Context, fn func(registry.Tx) (*registry.TxStage, error)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := s.group.DoStaged(func(btx *bbolt.Tx) (*boltgroup.Stage, error) {
		t := tx{t: btx, wrote: new(bool)}
		st, err := fn(t)
		if err != nil {
			if !*t.wrote {
				return nil, boltgroup.NoWrite(err)
			}
			return nil, err
		}
		if st == nil {
			return nil, nil
		}
		return &boltgroup.Stage{
			Work:   st.Work,
			Finish: func(btx *bbolt.Tx) error { return st.Finish(tx{t: btx, wrote: new(bool)}) },
		}, nil
	})
	if errors.Is(err, boltgroup.ErrClosed) {
		return registry.ErrClosed
	}
	return wrap(err)
}

// View runs fn in a read-only transaction.
func (s *Store) View(ctx context.Context, fn func(registry.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return wrap(s.db.View(func(btx *bbolt.Tx) error { return fn(tx{t: btx}) }))
}

func wrap(err error) error {
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return registry.ErrClosed
	}
	return err
}

// Close stops the committer and closes the file; callers must have
// stopped calling Update.
func (s *Store) Close() error {
	s.group.Close()
	return s.db.Close()
}

// tx is a registry.Tx over a bbolt transaction. wrote records whether any
// write was made through it (nil in read-only transactions), so a failed
// operation that wrote nothing can leave its group alone.
type tx struct {
	t     *bbolt.Tx
	wrote *bool
}

// bucket returns a bucket to write to, noting the write.
func (t tx) bucket(name []byte) *bbolt.Bucket {
	*t.wrote = true
	return t.t.Bucket(name)
}

func getJSON[V any](t *bbolt.Tx, bucket []byte, key string) (V, bool, error) {
	var v V
	raw := t.Bucket(bucket).Get([]byte(key))
	if raw == nil {
		return v, false, nil
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, false, fmt.Errorf("%w: registry/bolt: corrupt %s/%q: %v", registry.ErrBackend, bucket, key, err)
	}
	return v, true, nil
}

func putJSON(b *bbolt.Bucket, key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("registry/bolt: encode: %w", err)
	}
	return b.Put([]byte(key), raw)
}

// getRecord reads and decodes a binary (or older JSON) record.
func getRecord[V any](t *bbolt.Tx, bucket []byte, key string, decode func([]byte) (V, error)) (V, bool, error) {
	raw := t.Bucket(bucket).Get([]byte(key))
	if raw == nil {
		var zero V
		return zero, false, nil
	}
	v, err := decode(raw)
	if err != nil {
		return v, false, fmt.Errorf("%w: registry/bolt: corrupt %s/%q: %w", registry.ErrBackend, bucket, key, err)
	}
	return v, true, nil
}

func (t tx) Meta() (registry.Meta, error) {
	m, _, err := getRecord(t.t, bMeta, string(kMeta), decodeMeta)
	return m, err
}
func (t tx) PutMeta(m registry.Meta) error { return t.bucket(bMeta).Put(kMeta, encodeMeta(m)) }
func (t tx) Resource(id string) (registry.ResourceRecord, bool, error) {
	return getRecord(t.t, bResources, id, decodeResource)
}
func (t tx) PutResource(r registry.ResourceRecord) error {
	return t.bucket(bResources).Put([]byte(r.Resource), encodeResource(r))
}
func (t tx) Lease(id string) (registry.LeaseRecord, bool, error) {
	return getRecord(t.t, bLeases, id, decodeLease)
}
func (t tx) PutLease(l registry.LeaseRecord) error {
	return t.bucket(bLeases).Put([]byte(l.Lease), encodeLease(l))
}
func (t tx) LeaseByRequest(owner, req string) (string, bool, error) {
	return getString(t.t, bRequests, owner+"\x00"+req)
}
func (t tx) PutRequest(owner, req, id string) error {
	return t.bucket(bRequests).Put([]byte(owner+"\x00"+req), []byte(id))
}
func (t tx) LeaseByDigest(d string) (string, bool, error) { return getString(t.t, bDigests, d) }
func (t tx) PutDigest(d, id string) error {
	return t.bucket(bDigests).Put([]byte(d), []byte(id))
}
func (t tx) Policies() ([]fencegate.Policy, error) {
	var out []fencegate.Policy
	err := t.t.Bucket(bPolicies).ForEach(func(k, v []byte) error {
		var p fencegate.Policy
		if err := json.Unmarshal(v, &p); err != nil {
			return fmt.Errorf("%w: registry/bolt: corrupt policy %q: %v", registry.ErrBackend, k, err)
		}
		out = append(out, p)
		return nil
	})
	return out, err
}
func (t tx) PutPolicy(p fencegate.Policy) error { return putJSON(t.bucket(bPolicies), p.Pattern, p) }

func (t tx) EachLease(fn func(registry.LeaseRecord) error) error {
	return t.t.Bucket(bLeases).ForEach(func(k, v []byte) error {
		l, err := decodeLease(v)
		if err != nil {
			return fmt.Errorf("%w: registry/bolt: corrupt lease %q: %w", registry.ErrBackend, k, err)
		}
		return fn(l)
	})
}

func (t tx) DeleteLease(l registry.LeaseRecord) error {
	if err := t.bucket(bLeases).Delete([]byte(l.Lease)); err != nil {
		return err
	}
	if err := t.bucket(bRequests).Delete([]byte(l.Owner + "\x00" + l.RequestID)); err != nil {
		return err
	}
	return t.bucket(bDigests).Delete([]byte(l.Digest))
}

func getString(t *bbolt.Tx, bucket []byte, key string) (string, bool, error) {
	v := t.Bucket(bucket).Get([]byte(key))
	if v == nil {
		return "", false, nil
	}
	return string(v), true, nil
}

func (t tx) Lineage() (string, error) {
	m, err := t.Meta()
	return m.Lineage, err
}

func (t tx) StoreRecord(store string) (registry.StoreRecord, bool, error) {
	return getJSON[registry.StoreRecord](t.t, bStores, store)
}
func (t tx) PutStoreRecord(r registry.StoreRecord) error {
	return putJSON(t.bucket(bStores), r.Store, r)
}

func (t tx) Ledger(store string) ([]fencegate.LedgerEntry, error) {
	l, _, err := getJSON[[]fencegate.LedgerEntry](t.t, bLedgers, store)
	return l, err
}
func (t tx) PutLedger(l registry.LedgerRecord) error {
	return putJSON(t.bucket(bLedgers), l.Store, l.Entries)
}

// anchorBucket is the nested bucket of store's anchors (nil if none yet).
func (t tx) anchorBucket(store string) *bbolt.Bucket {
	return t.t.Bucket(bAnchors).Bucket([]byte(store))
}

func decodeProgress(store string, k, v []byte) (fencegate.Progress, error) {
	var p fencegate.Progress
	if err := json.Unmarshal(v, &p); err != nil {
		return p, fmt.Errorf("%w: registry/bolt: corrupt anchor %s/%q: %v", registry.ErrBackend, store, k, err)
	}
	return p, nil
}

func (t tx) Anchors(store string, resources []string) (map[string]fencegate.Progress, error) {
	out := make(map[string]fencegate.Progress, len(resources))
	b := t.anchorBucket(store)
	if b == nil {
		return out, nil
	}
	for _, r := range resources {
		v := b.Get([]byte(r))
		if v == nil {
			continue
		}
		p, err := decodeProgress(store, []byte(r), v)
		if err != nil {
			return nil, err
		}
		out[r] = p
	}
	return out, nil
}

func (t tx) PutAnchor(a registry.AnchorRecord) error {
	b, err := t.bucket(bAnchors).CreateBucketIfNotExists([]byte(a.Store))
	if err != nil {
		return fmt.Errorf("registry/bolt: anchors of %s: %w", a.Store, err)
	}
	if b.Get([]byte(a.Resource)) == nil {
		n, err := t.AnchorCount(a.Store)
		if err != nil {
			return err
		}
		if err := t.bucket(bCounts).Put([]byte(a.Store), binary.BigEndian.AppendUint64(nil, n+1)); err != nil {
			return err
		}
	}
	return putJSON(b, a.Resource, a.Progress)
}

func (t tx) AnchorsAfter(store, after string, limit int) ([]fencegate.ResourceAnchor, error) {
	var out []fencegate.ResourceAnchor
	b := t.anchorBucket(store)
	if b == nil || limit <= 0 {
		return out, nil
	}
	c := b.Cursor()
	k, v := c.Seek([]byte(after))
	if k != nil && string(k) == after {
		k, v = c.Next()
	}
	for ; k != nil && len(out) < limit; k, v = c.Next() {
		p, err := decodeProgress(store, k, v)
		if err != nil {
			return nil, err
		}
		out = append(out, fencegate.ResourceAnchor{Resource: string(k), Anchored: p})
	}
	return out, nil
}

func (t tx) AnchorCount(store string) (uint64, error) {
	v := t.t.Bucket(bCounts).Get([]byte(store))
	if v == nil {
		return 0, nil
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: registry/bolt: corrupt anchor count of %s", registry.ErrBackend, store)
	}
	return binary.BigEndian.Uint64(v), nil
}

// ListLeases is EachLease: bbolt's ForEach walks every lease in one
// read transaction.
func (t tx) ListLeases(fn func(registry.LeaseRecord) error) error { return t.EachLease(fn) }
