package server

import (
	"fmt"
	"os"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate/proxy"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/bolt"
	"github.com/fencegate/fencegate/store/memory"
)

// openStore opens the fenced store cfg.Store names, sized for the largest
// response a route keeps.
func openStore(cfg proxy.Config, log *zap.Logger) (store.Store, error) {
	maxBody := 0
	for _, r := range cfg.Routes {
		maxBody = max(maxBody, r.ResponseStoreLimit)
	}
	switch cfg.Store.Backend {
	case "memory":
		log.Warn("memory store: accepted fences do not survive a restart; for tests only")
		return memory.New(memory.Options{MaxResponseBody: maxBody}), nil
	case "bolt":
		if err := os.MkdirAll(filepath.Dir(cfg.Store.Path), 0o700); err != nil {
			return nil, fmt.Errorf("server: store: %w", err)
		}
		st, err := bolt.Open(cfg.Store.Path, bolt.Options{MaxResponseBody: maxBody})
		if err != nil {
			return nil, fmt.Errorf("server: store: %w", err)
		}
		return st, nil
	}
	return nil, fmt.Errorf("server: store.backend: %q is not bolt or memory", cfg.Store.Backend)
}
