package redis

import "github.com/fencegate/fencegate/registry"

// The names watermark_test.go was written against, before the watermark
// moved to registry/internal/rollback (its own tests are there).

func (w *watermark) check(seen watermarkState, m registry.Meta, found bool) error {
	return w.Check(seen, m, found)
}

func (w *watermark) snapshot() watermarkState { return w.Snapshot() }
