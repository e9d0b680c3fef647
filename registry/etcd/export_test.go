package etcd

import "github.com/fencegate/fencegate/registry"

// Watches counts the wake-up watches of the Store behind a backend of
// OpenBackend.
func Watches(be registry.Backend) int { return be.(backend).s.Watches() }

// WatchCounts is Store.WatchCounts of the Store behind a backend of
// OpenBackend.
func WatchCounts(be registry.Backend) (started, ended int64) { return be.(backend).s.WatchCounts() }
