package etcd

import "github.com/fencegate/fencegate/registry"

// Watches counts the wake-up watches of the Store behind a backend of
// OpenBackend.
func Watches(be registry.Backend) int { return be.(backend).s.Watches() }
