package redis_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/internal/wakeuptest"
	"github.com/fencegate/fencegate/registry/redis"
	"github.com/fencegate/fencegate/registry/registrytest"
)

// TestConformance runs the registry conformance suite on one private
// redis-server, each subtest under its own key prefix (so each starts
// empty, and prefixes are shown not to leak into each other). A second
// Store on the same prefix is a second registry process.
func TestConformance(t *testing.T) {
	srv := redistest.Start(t)
	var n atomic.Int64
	registrytest.Run(t, func(t *testing.T) registrytest.Opener {
		prefix := fmt.Sprintf("conf%d", n.Add(1))
		open := func() (registry.Backend, error) {
			return redis.OpenBackend(context.Background(), redis.Options{Addr: srv.Addr(), Prefix: prefix})
		}
		return registrytest.Opener{Open: open, Shared: open}
	})
}

// newRegistry returns a Registry over be with a fresh key and metrics,
// running until the test ends, as a registry process's server runs it,
// once Run's subscription is confirmed (wakeuptest.NewRegistry).
func newRegistry(t testing.TB, be registry.Backend, k registrytest.Keys, clk clock.Clock) *registry.Registry {
	t.Helper()
	return wakeuptest.NewRegistry(t, be, k, clk, redis.Subscriptions)
}

// open opens a backend on addr under the default prefix.
func open(t testing.TB, addr string) registry.Backend {
	t.Helper()
	be, err := redis.OpenBackend(context.Background(), redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return be
}
