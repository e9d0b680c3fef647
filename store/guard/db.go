package guard

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/fencegate/fencegate/internal/boltgroup"

	"github.com/fencegate/fencegate/store"
)

// The checkpoint file is a bbolt file with three buckets:
//
//	meta         "format" = "fencegate.guard", "schema" = "1",
//	             "clock" = last Touched (8, BE), "count" = checkpoints (8, BE)
//	checkpoints  resource → Checkpoint (see Checkpoint.encode)
//	lru          Touched (8, BE) → resource (index for eviction)
var (
	bucketMeta        = []byte("meta")
	bucketCheckpoints = []byte("checkpoints")
	bucketLRU         = []byte("lru")
	keyFormat         = []byte("format")
	keySchema         = []byte("schema")
	keyClock          = []byte("clock")
	keyCount          = []byte("count")
)

const (
	fileFormat = "fencegate.guard"
	// schemaVersion is bumped on any change of the buckets or the stored
	// checkpoint shape; Wrap refuses a file of another version.
	schemaVersion = 1
)

// Defaults of the file's handling.
const (
	// lockTimeout bounds the wait for the file lock held by another
	// process (another sidecar on the same dataDir): it does not start.
	lockTimeout = 5 * time.Second
	// maxGroup caps the writes one transaction carries.
	maxGroup = 256
)

// checkpointDB is one open checkpoint file. Every guard of this process
// that names the same file shares it: bbolt's file lock would otherwise
// make the second wait and fail, and two handles would not see each
// other's writes (a restarted sidecar in a test, or two guards wired to
// one dataDir, must see one state).
type checkpointDB struct {
	db    *bbolt.DB
	key   string
	refs  int // under dbsMu
	group *boltgroup.Committer
}

var (
	dbsMu sync.Mutex
	dbs   = map[string]*checkpointDB{}
)

// openDB opens (creating if needed) the checkpoint file at path, or shares
// the handle this process already holds on it.
func openDB(path string) (*checkpointDB, error) {
	key, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store/guard: checkpoint path: %w", err)
	}
	dbsMu.Lock()
	defer dbsMu.Unlock()
	if d := dbs[key]; d != nil {
		d.refs++
		return d, nil
	}
	db, err := bbolt.Open(key, 0o600, &bbolt.Options{Timeout: lockTimeout, NoFreelistSync: true, FreelistType: bbolt.FreelistMapType})
	if err != nil {
		return nil, fmt.Errorf("store/guard: open checkpoints %s: %w", path, err)
	}
	if err := db.Update(initSchema); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store/guard: checkpoints %s: %w", path, err)
	}
	d := &checkpointDB{db: db, key: key, refs: 1, group: boltgroup.New(db, maxGroup)}
	dbs[key] = d
	return d, nil
}

// release drops one reference; the last one closes the file.
func (d *checkpointDB) release() error {
	dbsMu.Lock()
	defer dbsMu.Unlock()
	d.refs--
	if d.refs > 0 {
		return nil
	}
	delete(dbs, d.key)
	d.group.Close()
	if err := d.db.Close(); err != nil {
		return fmt.Errorf("store/guard: close checkpoints: %w", err)
	}
	return nil
}

// initSchema creates the buckets of a new file and checks an existing
// one is a checkpoint file of this schema.
func initSchema(tx *bbolt.Tx) error {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		if tx.Bucket(bucketCheckpoints) != nil || firstBucket(tx) != nil {
			return fmt.Errorf("%w: a bbolt file without the guard's meta bucket", ErrCorrupt)
		}
		var err error
		if meta, err = tx.CreateBucket(bucketMeta); err != nil {
			return err
		}
		if err := meta.Put(keyFormat, []byte(fileFormat)); err != nil {
			return err
		}
		if err := meta.Put(keySchema, []byte(strconv.Itoa(schemaVersion))); err != nil {
			return err
		}
		for _, b := range [][]byte{bucketCheckpoints, bucketLRU} {
			if _, err := tx.CreateBucket(b); err != nil {
				return err
			}
		}
		return nil
	}
	if f := meta.Get(keyFormat); string(f) != fileFormat {
		return fmt.Errorf("%w: format %q, want %q", ErrCorrupt, f, fileFormat)
	}
	if s := meta.Get(keySchema); string(s) != strconv.Itoa(schemaVersion) {
		return fmt.Errorf("%w: schema %q, want %d", ErrCorrupt, s, schemaVersion)
	}
	if tx.Bucket(bucketCheckpoints) == nil || tx.Bucket(bucketLRU) == nil {
		return fmt.Errorf("%w: missing bucket", ErrCorrupt)
	}
	return nil
}

// firstBucket returns the name of any bucket of tx, or nil.
func firstBucket(tx *bbolt.Tx) []byte {
	k, _ := tx.Cursor().First()
	return k
}

// get reads the checkpoint of resource in tx.
func get(tx *bbolt.Tx, resource string) (Checkpoint, bool, error) {
	v := tx.Bucket(bucketCheckpoints).Get([]byte(resource))
	if v == nil {
		return Checkpoint{}, false, nil
	}
	c, err := decodeCheckpoint(v)
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("%w (resource %q)", err, resource)
	}
	return c, true, nil
}

// counter reads a meta counter; a missing one is 0.
func counter(meta *bbolt.Bucket, key []byte) (uint64, error) {
	v := meta.Get(key)
	switch len(v) {
	case 0:
		return 0, nil
	case 8:
		return binary.BigEndian.Uint64(v), nil
	}
	return 0, fmt.Errorf("%w: meta %s of %d bytes", ErrCorrupt, key, len(v))
}

// put applies f to the checkpoint of resource in tx (a new one if none),
// writes it if it changed as the most recently used, and drops the least
// recently used checkpoints past max. It re-reads everything, so it may
// run again in another transaction (see boltgroup.Committer.Do).
func put(tx *bbolt.Tx, resource string, f func(*Checkpoint), max int) error {
	old, had, err := get(tx, resource)
	if err != nil {
		return err
	}
	c := old
	f(&c)
	c.Touched = old.Touched
	if had && c == old {
		return nil
	}
	meta, cps, lru := tx.Bucket(bucketMeta), tx.Bucket(bucketCheckpoints), tx.Bucket(bucketLRU)
	clock, err := counter(meta, keyClock)
	if err != nil {
		return err
	}
	count, err := counter(meta, keyCount)
	if err != nil {
		return err
	}
	if had {
		if err := lru.Delete(be64(old.Touched)); err != nil {
			return err
		}
	} else {
		count++
	}
	clock++
	c.Touched = clock
	if err := cps.Put([]byte(resource), c.encode()); err != nil {
		return err
	}
	if err := lru.Put(be64(clock), []byte(resource)); err != nil {
		return err
	}
	for count > uint64(max) {
		k, r := lru.Cursor().First()
		if k == nil {
			return fmt.Errorf("%w: %d checkpoints counted, the LRU index is empty", ErrCorrupt, count)
		}
		// Copy: bbolt's slices are invalid after a change of the bucket.
		r = append([]byte(nil), r...)
		if err := lru.Delete(k); err != nil {
			return err
		}
		if err := cps.Delete(r); err != nil {
			return err
		}
		count--
	}
	if err := meta.Put(keyClock, be64(clock)); err != nil {
		return err
	}
	return meta.Put(keyCount, be64(count))
}

func be64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// errClosedDB maps bbolt's closed-database error, and a closed committer,
// to store.ErrClosed.
func errClosedDB(err error) error {
	if errors.Is(err, berrors.ErrDatabaseNotOpen) || errors.Is(err, boltgroup.ErrClosed) {
		return store.ErrClosed
	}
	return err
}
