package redisconf

import (
	"context"
	"errors"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// DefaultReplicaTimeout bounds WaitReplicas when the caller gives no
// timeout.
const DefaultReplicaTimeout = time.Second

// ErrNotReplicated is returned by WaitReplicas when fewer replicas than
// asked acknowledged the connection's writes in time. The writes are on
// the primary all the same: the caller reports their outcome as unknown.
var ErrNotReplicated = errors.New("redisconf: writes not acknowledged by enough replicas")

// Waiter is a connection that can send WAIT (*goredis.Tx, *goredis.Conn).
type Waiter interface {
	Wait(ctx context.Context, numReplicas int, timeout time.Duration) *goredis.IntCmd
}

// WaitReplicas sends WAIT on c, which must be the connection that ran the
// writes (a *goredis.Tx after its EXEC): it returns once n replicas have
// acknowledged every write of that connection, or ErrNotReplicated after
// timeout (DefaultReplicaTimeout when zero). n <= 0 returns at once.
//
// Replication stays asynchronous: WAIT makes a write that was answered
// survive the loss of the primary only if the replica promoted is one that
// acknowledged it (with n equal to the number of replicas, any of them).
func WaitReplicas(ctx context.Context, c Waiter, n int, timeout time.Duration) error {
	if n <= 0 {
		return nil
	}
	if timeout <= 0 {
		timeout = DefaultReplicaTimeout
	}
	got, err := c.Wait(ctx, n, timeout).Result()
	if err != nil {
		return fmt.Errorf("wait for %d replicas: %w", n, err)
	}
	if got < int64(n) {
		return fmt.Errorf("%w: %d of %d within %v", ErrNotReplicated, got, n, timeout)
	}
	return nil
}
