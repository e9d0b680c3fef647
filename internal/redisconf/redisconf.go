package redisconf

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	goredis "github.com/redis/go-redis/v9"
)

// ErrEvicting is returned by CheckNoEviction when the server's
// maxmemory-policy may evict keys (anything but noeviction).
var ErrEvicting = errors.New("redisconf: the server's maxmemory-policy may evict keys (want noeviction)")

// CheckNoEviction reads the server's maxmemory-policy and returns an error
// wrapping ErrEvicting for any other than noeviction. A server that does
// not let it read the policy (CONFIG renamed or denied, as managed services
// do) is logged under who and accepted: the operator is then responsible
// for the policy. A connection error is returned as it is.
func CheckNoEviction(ctx context.Context, c goredis.UniversalClient, log *slog.Logger, who string) error {
	if log == nil {
		log = slog.Default()
	}
	m, err := c.ConfigGet(ctx, "maxmemory-policy").Result()
	var rerr goredis.Error
	switch {
	case errors.As(err, &rerr):
		log.Warn(who+": cannot read maxmemory-policy; make sure it is noeviction", "error", err)
		return nil
	case err != nil:
		return fmt.Errorf("read maxmemory-policy: %w", err)
	}
	p, ok := m["maxmemory-policy"]
	if !ok {
		log.Warn(who + ": the server does not report maxmemory-policy; make sure it is noeviction")
		return nil
	}
	if p != "noeviction" {
		return fmt.Errorf("%w: it is %s", ErrEvicting, p)
	}
	return nil
}
