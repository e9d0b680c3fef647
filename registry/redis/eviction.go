package redis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/internal/redisconf"
	"github.com/fencegate/fencegate/registry"
)

// ErrEvictionPolicy is returned by Open when the server may evict keys:
// its maxmemory-policy is not noeviction. An evicted resource record (or
// the meta key) forgets the last fence issued, after which fences are
// issued again, so the registry refuses such a server unless
// Options.AllowEviction says the operator has ruled that out.
var ErrEvictionPolicy = errors.New("registry/redis: the server's maxmemory-policy may evict keys (want noeviction)")

// checkEviction refuses a server whose maxmemory-policy may evict keys
// (see redisconf.CheckNoEviction).
func checkEviction(ctx context.Context, c *goredis.Client, log *slog.Logger) error {
	err := redisconf.CheckNoEviction(ctx, c, log, "registry/redis")
	switch {
	case errors.Is(err, redisconf.ErrEvicting):
		return fmt.Errorf("%w: %w", ErrEvictionPolicy, err)
	case err != nil:
		return fmt.Errorf("%w: registry/redis: open: %w", registry.ErrBackend, err)
	}
	return nil
}
