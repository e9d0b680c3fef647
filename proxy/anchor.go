package proxy

import (
	"errors"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/store/anchor"
)

// markerSlack is what a Begin's marker deadline adds to backend.timeout:
// the time the sidecar has to settle the mutation after its forward's
// deadline (see times).
const markerSlack = 5 * time.Second

// RepairWindow is how long a mutation that a store repair puts back as
// UNKNOWN (store/anchor, after a loss) may still be applied by the
// backend from the repair on: the forward's own deadline plus
// backend.maxApplyDelay. The repaired marker is not quiet before it ends.
func (c Config) RepairWindow() time.Duration {
	return c.Backend.Timeout + markerSlack + c.Backend.MaxApplyDelay
}

// storeFailure is the refusal of a Begin that failed in the fenced store:
// STORE_UNAVAILABLE whatever the cause (fail closed, nothing forwarded),
// with a detail that says which failure it was.
func storeFailure(err error) *rejection {
	switch {
	case errors.Is(err, anchor.ErrStoreLost):
		return reject(fencegate.CodeStoreUnavailable, "the fenced store lost data (its generation is not the one the registry anchored): writes are refused until an operator acknowledges the loss at the registry; nothing was forwarded")
	case errors.Is(err, anchor.ErrNotAnchored):
		return reject(fencegate.CodeStoreUnavailable, "the store's progress could not be anchored at the registry; nothing was forwarded")
	}
	return reject(fencegate.CodeStoreUnavailable, "the fenced store failed; nothing was forwarded")
}
