package guard

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"go.etcd.io/bbolt"
)

// File names in the sidecar's dataDir, and the suffix the sidecar appends
// once it took a file into account.
const (
	FileName     = "store-checkpoint.db"
	JSONFileName = "store-checkpoint.json"
	// UpgradedSuffix is appended to a file's name once its checkpoints
	// were taken into account by the anchor (kept for an operator).
	UpgradedSuffix = ".upgraded"
)

var (
	bucketMeta        = []byte("meta")
	bucketCheckpoints = []byte("checkpoints")
	keyFormat         = []byte("format")
	keySchema         = []byte("schema")
)

const (
	fileFormat  = "fencegate.guard"
	fileSchema  = "1"
	jsonVersion = 1
	// lockTimeout bounds the wait for a file lock another process holds.
	lockTimeout = 5 * time.Second
)

// Read returns the checkpoints of the bbolt checkpoint file at path, by
// resource; none when there is no file. The file is opened read-only. A
// file of another format or schema, or a value of another shape, is
// ErrCorrupt.
func Read(path string) (map[string]Checkpoint, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: lockTimeout})
	if err != nil {
		return nil, fmt.Errorf("store/guard: open checkpoints %s: %w", path, err)
	}
	defer db.Close()
	out := map[string]Checkpoint{}
	err = db.View(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil || string(meta.Get(keyFormat)) != fileFormat || string(meta.Get(keySchema)) != fileSchema {
			return fmt.Errorf("%w: %s is not a checkpoint file of schema %s", ErrCorrupt, path, fileSchema)
		}
		cps := tx.Bucket(bucketCheckpoints)
		if cps == nil {
			return fmt.Errorf("%w: %s: missing bucket", ErrCorrupt, path)
		}
		return cps.ForEach(func(k, v []byte) error {
			c, err := decodeCheckpoint(v)
			if err != nil {
				return fmt.Errorf("%w (resource %q)", err, k)
			}
			out[string(k)] = c
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ReadJSON returns the checkpoints of the JSON checkpoint file at path
// (earlier versions), by resource; none when there is no file.
func ReadJSON(path string) (map[string]Checkpoint, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store/guard: read checkpoints: %w", err)
	}
	var f struct {
		Version   int                   `json:"version"`
		Resources map[string]Checkpoint `json:"resources"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
	}
	if f.Version != jsonVersion {
		return nil, fmt.Errorf("%w: %s: version %d, want %d", ErrCorrupt, path, f.Version, jsonVersion)
	}
	return f.Resources, nil
}

// Merge returns the higher of two checkpoints of one resource, field by
// field as the guard merged an imported file: the higher fence (with its
// segment; the higher segment under the same fence), an outstanding
// UNKNOWN of either, a pause seen by either.
func Merge(a, b Checkpoint) Checkpoint {
	out := a
	switch {
	case b.Fence > a.Fence:
		out.Fence, out.Seq = b.Fence, b.Seq
	case b.Fence == a.Fence && b.Seq > a.Seq:
		out.Seq = b.Seq
	}
	if b.UnknownSeq != 0 && (a.UnknownSeq == 0 || b.UnknownFence > a.UnknownFence) {
		out.UnknownFence, out.UnknownSeq = b.UnknownFence, b.UnknownSeq
	}
	out.SawPause = a.SawPause || b.SawPause
	out.Touched = max(a.Touched, b.Touched)
	return out
}
