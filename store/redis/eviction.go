package redis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/internal/redisconf"
)

// ErrEvictionPolicy is returned by Open when the server may evict keys:
// its maxmemory-policy is not noeviction. An evicted record forgets its
// resource's highest fence, after which a stale owner is accepted, so the
// store refuses such a server unless Options.AllowEviction says the
// operator has ruled that out.
var ErrEvictionPolicy = errors.New("store/redis: the server's maxmemory-policy may evict keys (want noeviction)")

// checkEviction refuses a server whose maxmemory-policy may evict keys
// (see redisconf.CheckNoEviction).
func checkEviction(ctx context.Context, c goredis.UniversalClient, log *slog.Logger) error {
	err := redisconf.CheckNoEviction(ctx, c, log, "store/redis")
	switch {
	case errors.Is(err, redisconf.ErrEvicting):
		return fmt.Errorf("%w: %w", ErrEvictionPolicy, err)
	case err != nil:
		return fmt.Errorf("store/redis: open: %w", err)
	}
	return nil
}
