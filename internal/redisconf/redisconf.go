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
	m, ok, err := readConfig(ctx, c, log, who, "maxmemory-policy", "maxmemory-policy", "it is noeviction")
	if !ok || err != nil {
		return err
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

// readConfig runs CONFIG GET pattern. A server that refuses it (CONFIG
// renamed or denied, as managed services do) is logged under who, naming
// what cannot be read and what to make sure of, and reported !ok with no
// error: the operator is then responsible. A connection error is
// returned as it is.
func readConfig(ctx context.Context, c goredis.UniversalClient, log *slog.Logger, who, pattern, what, want string) (map[string]string, bool, error) {
	m, err := c.ConfigGet(ctx, pattern).Result()
	var rerr goredis.Error
	switch {
	case errors.As(err, &rerr):
		log.Warn(who+": cannot read "+what+"; make sure "+want, "error", err)
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("read %s: %w", what, err)
	}
	return m, true, nil
}
