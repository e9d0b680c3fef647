package redis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencegate/fencegate/internal/redisconf"
)

// ErrNotDurable is returned by Open when the server reports other than
// appendonly yes and appendfsync always: it can acknowledge a Begin or a
// Commit and lose it in a restart, and a record lost that way forgets its
// resource's highest fence (the generation check notices a server that
// came back empty, not one that lost its last second). The store refuses
// such a server unless Options.AllowNonDurable.
var ErrNotDurable = errors.New("store/redis: the server may lose acknowledged writes (want appendonly yes and appendfsync always)")

// checkDurable refuses a server that may lose acknowledged writes (see
// redisconf.CheckDurable), unless allow (Options.AllowNonDurable): then
// such a server is accepted with a warning naming what it reported, so a
// scratch setting that reached production shows in the start's log.
func checkDurable(ctx context.Context, allow bool, c goredis.UniversalClient, log *slog.Logger) error {
	var nd *redisconf.NotDurableError
	err := redisconf.CheckDurable(ctx, c, log, "store/redis")
	switch {
	case errors.As(err, &nd) && allow:
		redisconf.WarnNonDurable(log, "store/redis", nd.Reported)
		return nil
	case errors.As(err, &nd):
		return fmt.Errorf("%w: it runs with %s; configure appendonly yes and appendfsync always (redis.conf or CONFIG SET), or set allowNonDurable for a scratch server", ErrNotDurable, nd.Reported)
	case err != nil:
		return fmt.Errorf("store/redis: open: %w", err)
	}
	return nil
}
