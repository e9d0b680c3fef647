package redis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/registry"
)

// ErrEvictionPolicy is returned by Open when the server may evict keys:
// its maxmemory-policy is not noeviction. An evicted resource record (or
// the meta key) forgets the last fence issued, after which fences are
// issued again, so the registry refuses such a server unless
// Options.AllowEviction says the operator has ruled that out.
var ErrEvictionPolicy = errors.New("registry/redis: the server's maxmemory-policy may evict keys (want noeviction)")

// checkEviction reads the server's maxmemory-policy and refuses any other
// than noeviction. A server that does not let it read the policy (CONFIG
// renamed or denied, as managed services do) is logged and accepted: the
// operator is then responsible for the policy. A connection error fails.
func checkEviction(ctx context.Context, c *goredis.Client, log *slog.Logger) error {
	m, err := c.ConfigGet(ctx, "maxmemory-policy").Result()
	var rerr goredis.Error
	switch {
	case errors.As(err, &rerr):
		if log == nil {
			log = slog.Default()
		}
		log.Warn("registry/redis: cannot read maxmemory-policy; make sure it is noeviction", "error", err)
		return nil
	case err != nil:
		return fmt.Errorf("%w: registry/redis: open: read maxmemory-policy: %w", registry.ErrBackend, err)
	}
	p, ok := m["maxmemory-policy"]
	if !ok {
		if log == nil {
			log = slog.Default()
		}
		log.Warn("registry/redis: the server does not report maxmemory-policy; make sure it is noeviction")
		return nil
	}
	if p != "noeviction" {
		return fmt.Errorf("%w: it is %s", ErrEvictionPolicy, p)
	}
	return nil
}
