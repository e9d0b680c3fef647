package guard

import "errors"

// ErrCorrupt means a checkpoint file holds something that is not what the
// guard wrote. The sidecar then refuses to start rather than drop what
// the file may say about a store that lost data.
var ErrCorrupt = errors.New("store/guard: checkpoints are corrupt")
