package redis

import (
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/internal/txstore"
)

// Subscriptions counts the confirmed subscriptions of be (a backend of
// OpenBackend) so far: Registry.Run's Subscribe adds one once the server
// confirmed it.
func Subscriptions(be registry.Backend) int {
	s := be.(txstore.Backend).TxStore.(*Store)
	n := 0
	_ = s.shell.Shared(func() error { n = len(s.subs); return nil }) // 0 once closed
	return n
}
