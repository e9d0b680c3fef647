package anchor

import "errors"

// Errors of the wrapper's store calls. Each is wrapped with the cause; none
// wraps a store sentinel (store.ErrNotFound ...), so the proxy answers
// STORE_UNAVAILABLE and forwards nothing.
var (
	// ErrStoreLost is returned by Begin (and every anchored write) while
	// the store is lost: the registry anchored another generation than the
	// store's (it restarted empty, is another data set, or the bbolt file
	// was replaced), or the store reported its generation changed. Writes
	// are refused until an operator acknowledges the loss at the registry
	// and this sidecar has repaired its store from the anchors; reads pass.
	ErrStoreLost = errors.New("store/anchor: the fenced store lost data (its generation is not the one the registry anchored); writes are refused until the loss is acknowledged at the registry")
	// ErrNotAnchored is returned by Begin when the step could not be
	// anchored at the registry (unreachable, an error, or the registry
	// being re-seeded after it was replaced): nothing was forwarded.
	ErrNotAnchored = errors.New("store/anchor: the store's progress could not be anchored at the registry; nothing was forwarded")
	// ErrSettleRefused is returned by Abort, Resolve (not applied) and
	// Resume when the registry did not weaken the anchor first (an error,
	// or CONFLICT: the anchored mutation is not the one being settled):
	// the store was not changed (fail closed).
	ErrSettleRefused = errors.New("store/anchor: the anchor was not weakened at the registry; the store was not changed")
	// ErrNotOpen is returned by writes before Open succeeded.
	ErrNotOpen = errors.New("store/anchor: the store is not open (Open registers it at the registry first)")
)
