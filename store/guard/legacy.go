package guard

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"go.etcd.io/bbolt"
)

// legacyFile is the shape of the JSON checkpoint file of earlier versions
// (one file rewritten whole on every change), imported once at Wrap.
type legacyFile struct {
	Version   int                   `json:"version"`
	Clock     uint64                `json:"clock"`
	Resources map[string]Checkpoint `json:"resources"`
}

const legacyVersion = 1

// ImportedSuffix is appended to a legacy JSON checkpoint file's name once
// its checkpoints are in the bbolt file, so it is imported only once (and
// kept, for an operator to inspect).
const ImportedSuffix = ".imported"

// readLegacy reads the legacy JSON checkpoint file at path; ok is false
// when there is none.
func readLegacy(path string) (f legacyFile, ok bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return legacyFile{}, false, nil
	}
	if err != nil {
		return legacyFile{}, false, fmt.Errorf("store/guard: read legacy checkpoints: %w", err)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return legacyFile{}, false, fmt.Errorf("%w: legacy checkpoints %s: %v", ErrCorrupt, path, err)
	}
	if f.Version != legacyVersion {
		return legacyFile{}, false, fmt.Errorf("%w: legacy checkpoints %s: version %d, want %d", ErrCorrupt, path, f.Version, legacyVersion)
	}
	return f, true, nil
}

// importLegacy merges the legacy JSON checkpoint file at path, if any,
// into d in one durable transaction, then renames it path+ImportedSuffix
// and syncs its directory. A crash before the rename imports it again at
// the next start, which the merge makes harmless.
func importLegacy(d *checkpointDB, path string, max int) error {
	f, ok, err := readLegacy(path)
	if err != nil || !ok {
		return err
	}
	// Oldest first, so the most recently used stay past the bound.
	names := make([]string, 0, len(f.Resources))
	for r := range f.Resources {
		names = append(names, r)
	}
	slices.SortFunc(names, func(a, b string) int {
		ta, tb := f.Resources[a].Touched, f.Resources[b].Touched
		if ta != tb {
			if ta < tb {
				return -1
			}
			return 1
		}
		if a < b {
			return -1
		}
		return 1
	})
	err = d.db.Update(func(tx *bbolt.Tx) error {
		for _, r := range names {
			l := f.Resources[r]
			if err := putMerged(tx, r, l, max); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store/guard: import %s: %w", path, err)
	}
	if err := os.Rename(path, path+ImportedSuffix); err != nil {
		return fmt.Errorf("store/guard: import %s: %w", path, err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("store/guard: import %s: %w", path, err)
	}
	return nil
}

// putMerged merges a legacy checkpoint into the one the file may already
// hold for resource (a repeated import, or a file that outlived a
// downgrade), never lowering anything: the higher fence and segment; an
// outstanding unknown kept if either has one; SawPause only if both saw
// the pause, since SawPause makes the next Begin adopt the record as it
// is, the one weakening a merge must not invent.
func putMerged(tx *bbolt.Tx, resource string, l Checkpoint, max int) error {
	_, had, err := get(tx, resource)
	if err != nil {
		return err
	}
	return put(tx, resource, func(c *Checkpoint) {
		if !had {
			*c = Checkpoint{Fence: l.Fence, Seq: l.Seq, UnknownFence: l.UnknownFence, UnknownSeq: l.UnknownSeq, SawPause: l.SawPause}
			return
		}
		raise(c, l.Fence, l.Seq)
		if !c.unknown() && l.unknown() {
			c.UnknownFence, c.UnknownSeq = l.UnknownFence, l.UnknownSeq
		}
		c.SawPause = c.SawPause && l.SawPause
	}, max)
}

// syncDir fsyncs a directory, so a rename in it is durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
