package guard

import "errors"

// ErrCorrupt means the checkpoint file, or a legacy JSON checkpoint file
// being imported, holds something the guard cannot read. The guard then
// refuses to start: it never runs blind on checkpoints it cannot trust.
var ErrCorrupt = errors.New("store/guard: checkpoints are corrupt")
