package main

import (
	"context"
	"errors"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/clock"
)

// acquireWaiting acquires r, waiting up to wait for the current holder to
// release or expire: the registry bounds one waiting request (its
// leases.maxWait, 1m by default), so a longer wait is sent as successive
// requests of at most client.DefaultWaitChunk under the same request ID,
// as the SDK's Hold does. A request that is not answered LEASE_HELD ends
// the wait, granted or not.
func acquireWaiting(ctx context.Context, c *client.Client, r client.AcquireRequest, wait time.Duration) (*client.Lease, error) {
	deadline := clock.Real().Now().Add(wait)
	for {
		left := deadline.Sub(clock.Real().Now())
		r.Wait = max(0, min(left, client.DefaultWaitChunk))
		l, err := c.Acquire(ctx, r)
		if err == nil || !errors.Is(err, client.ErrLeaseHeld) || left <= client.DefaultWaitChunk {
			return l, err
		}
		if ctx.Err() != nil {
			return l, err
		}
	}
}
