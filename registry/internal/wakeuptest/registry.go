package wakeuptest

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/registrytest"
)

// Subscribed counts the confirmed subscriptions (Redis) or wake-up
// watches (etcd) of a backend: Registry.Run's Subscribe adds one once the
// store confirmed it.
type Subscribed func(registry.Backend) int

// subscribeLimit bounds NewRegistry's wait for Run's subscription.
const subscribeLimit = 10 * time.Second

// NewRegistry returns a Registry over be with k's signer, clk (nil: the
// real clock) and fresh metrics, running (registrytest.Start) until the
// test ends, as a registry process's server runs it. It returns once
// Run's subscription is confirmed (subscribed grew), so the test's first
// lease ended on another process reaches it.
func NewRegistry(t testing.TB, be registry.Backend, k registrytest.Keys, clk clock.Clock, subscribed Subscribed) *registry.Registry {
	t.Helper()
	reg, err := registry.New(registry.Options{Backend: be, Signer: k.Signer, Clock: clk, Metrics: prometheus.NewRegistry()})
	if err != nil {
		t.Fatalf("registry.New: %v", err)
	}
	before := subscribed(be)
	registrytest.Start(t, reg)
	real := clock.Real() // the wait for Run's goroutine is in real time
	for deadline := real.Now().Add(subscribeLimit); subscribed(be) == before; {
		if real.Now().After(deadline) {
			t.Fatalf("Registry.Run did not subscribe within %v", subscribeLimit)
		}
		clock.Sleep(real, time.Millisecond, nil)
	}
	return reg
}
