package etcd_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/internal/etcdtest"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/etcd"
	"github.com/fencegate/fencegate/registry/internal/wakeuptest"
	"github.com/fencegate/fencegate/registry/registrytest"
)

// conformance runs the registry conformance suite on c, each subtest under
// its own key prefix (so each starts empty). A second Store on the same
// prefix is a second registry process.
func conformance(t *testing.T, c *etcdtest.Cluster) {
	// A decision is several etcd round trips (on three members, quorum
	// ones); the concurrent races (160 grants on one resource) took over
	// the default 20 s in clean-clone CI runs under -race on 2 cores.
	// The one-member run hit it too in a loaded clean-clone run.
	limit := 90 * time.Second
	var n atomic.Int64
	registrytest.Run(t, func(t *testing.T) registrytest.Opener {
		prefix := fmt.Sprintf("conf%d", n.Add(1))
		open := func() (registry.Backend, error) {
			return etcd.OpenBackend(context.Background(), etcd.Options{Endpoints: c.Endpoints(), Prefix: prefix})
		}
		return registrytest.Opener{Open: open, Shared: open, RaceLimit: limit}
	})
}

// TestConformance runs the suite on a one-member etcd.
func TestConformance(t *testing.T) {
	conformance(t, etcdtest.Start(t, 1))
}

// newRegistry returns a Registry over be with a fresh key and metrics,
// running until the test ends, as a registry process's server runs it,
// once Run's watch is confirmed (wakeuptest.NewRegistry).
func newRegistry(t testing.TB, be registry.Backend, k registrytest.Keys, clk clock.Clock) *registry.Registry {
	t.Helper()
	return wakeuptest.NewRegistry(t, be, k, clk, etcd.Watches)
}

// open opens a backend on endpoints under the default prefix.
func open(t testing.TB, endpoints ...string) registry.Backend {
	t.Helper()
	be, err := etcd.OpenBackend(context.Background(), etcd.Options{Endpoints: endpoints, DialTimeout: 2 * time.Second})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { be.Close() })
	return be
}
