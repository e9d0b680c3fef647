package pgsnap

import "errors"

// ErrNoSnapshot is returned (wrapped) by Restore when the backup schema
// holds no snapshot (Save never ran for it, or Drop removed it).
var ErrNoSnapshot = errors.New("pgsnap: no snapshot saved in the backup schema")
