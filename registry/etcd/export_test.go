package etcd

import "github.com/fencegate/fencegate/registry"

// store is the Store behind a backend of OpenBackend.
func store(be registry.Backend) *Store { return be.(backend).TxStore.(*Store) }

// Watches counts the wake-up watches of the Store behind a backend of
// OpenBackend.
func Watches(be registry.Backend) int { return store(be).Watches() }

// WatchStarts counts the wake-up watches etcd confirmed to the Store
// behind a backend of OpenBackend (a watch started again counts again).
func WatchStarts(be registry.Backend) int64 { return store(be).watchStarts.Load() }

// WatchCounts is Store.WatchCounts of the Store behind a backend of
// OpenBackend.
func WatchCounts(be registry.Backend) (started, ended int64) { return store(be).WatchCounts() }
