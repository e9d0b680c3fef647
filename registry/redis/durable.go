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

// ErrNotDurable is returned by Open when the server reports other than
// appendonly yes and appendfsync always: it can acknowledge a grant and
// lose it in a restart, after which the fence it carried may be issued
// again (the state file's watermark detects the rollback and raises the
// fence floor, but only for a process that saw the lost write). The
// registry refuses such a server unless Options.AllowNonDurable.
var ErrNotDurable = errors.New("registry/redis: the server may lose acknowledged writes (want appendonly yes and appendfsync always)")

// checkDurable refuses a server that may lose acknowledged writes (see
// redisconf.CheckDurable), unless allow (Options.AllowNonDurable): then
// such a server is accepted with a warning naming what it reported, so a
// scratch setting that reached production shows in the start's log.
func checkDurable(ctx context.Context, allow bool, c *goredis.Client, log *slog.Logger) error {
	var nd *redisconf.NotDurableError
	err := redisconf.CheckDurable(ctx, c, log, "registry/redis")
	switch {
	case errors.As(err, &nd) && allow:
		redisconf.WarnNonDurable(log, "registry/redis", nd.Reported)
		return nil
	case errors.As(err, &nd):
		return fmt.Errorf("%w: it runs with %s; configure appendonly yes and appendfsync always (redis.conf or CONFIG SET), or set allowNonDurable for a scratch server", ErrNotDurable, nd.Reported)
	case err != nil:
		return fmt.Errorf("%w: registry/redis: open: %w", registry.ErrBackend, err)
	}
	return nil
}
