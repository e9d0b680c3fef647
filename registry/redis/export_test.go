package redis

import "github.com/fencegate/fencegate/registry"

// Subscriptions counts the confirmed subscriptions of be (a backend of
// OpenBackend) so far: Registry.Run's Subscribe adds one once the server
// confirmed it.
func Subscriptions(be registry.Backend) int {
	b := be.(backend)
	b.s.mu.RLock()
	defer b.s.mu.RUnlock()
	return len(b.s.subs)
}
