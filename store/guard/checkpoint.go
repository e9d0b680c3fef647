package guard

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/fencegate/fencegate/internal/atomicfile"
)

// Checkpoint is what a sidecar remembers locally about one resource: the
// highest fence and the last segment it saw the store accept, and the
// mutation it saw declared UNKNOWN and not yet settled, if any.
type Checkpoint struct {
	// Fence is the highest fence seen accepted.
	Fence uint64 `json:"fence"`
	// Seq is the last segment seen committed under Fence (0 if none).
	Seq uint64 `json:"seq"`
	// UnknownFence and UnknownSeq name the mutation seen UNKNOWN and not
	// seen settled; both 0 when none is outstanding.
	UnknownFence uint64 `json:"unknownFence,omitempty"`
	UnknownSeq   uint64 `json:"unknownSeq,omitempty"`
	// SawPause is set once the resource was seen paused: a later record
	// without the pause means an operator resumed it, and the checkpoint
	// then adopts the record as it is (the operator's acknowledgement).
	SawPause bool `json:"sawPause,omitempty"`
	// Touched orders checkpoints by last use, for eviction.
	Touched uint64 `json:"touched"`
}

// unknown reports whether an UNKNOWN mutation is outstanding.
func (c Checkpoint) unknown() bool { return c.UnknownSeq != 0 }

// file is the checkpoint file's JSON shape.
type file struct {
	Version   int                   `json:"version"`
	Clock     uint64                `json:"clock"`
	Resources map[string]Checkpoint `json:"resources"`
}

const fileVersion = 1

// load reads the checkpoint file at path; a missing file is an empty one.
func load(path string) (file, error) {
	f := file{Version: fileVersion, Resources: map[string]Checkpoint{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return file{}, fmt.Errorf("store/guard: read checkpoints: %w", err)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return file{}, fmt.Errorf("store/guard: checkpoints %s are corrupt: %w", path, err)
	}
	if f.Version != fileVersion {
		return file{}, fmt.Errorf("store/guard: checkpoints %s: version %d, want %d", path, f.Version, fileVersion)
	}
	if f.Resources == nil {
		f.Resources = map[string]Checkpoint{}
	}
	return f, nil
}

// save writes f to path durably: a temporary file, fsynced, renamed over
// path, and the directory fsynced.
func save(path string, f file) error {
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("store/guard: encode checkpoints: %w", err)
	}
	if err := atomicfile.Write(path, b); err != nil {
		return fmt.Errorf("store/guard: write checkpoints: %w", err)
	}
	return nil
}
