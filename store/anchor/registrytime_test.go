package anchor_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate/clock/clocktest"
	"github.com/fencegate/fencegate/registry"
	regmemory "github.com/fencegate/fencegate/registry/memory"
	"github.com/fencegate/fencegate/registry/registrytest"
	"github.com/fencegate/fencegate/store/anchor"
	"github.com/fencegate/fencegate/store/memory"
)

// TestRegistryTimeObserved: every answer of the registry hands its clock
// to Options.OnRegistryTime: the registration at Open (so a sidecar knows
// the registry's time from its start) and each anchor step.
func TestRegistryTimeObserved(t *testing.T) {
	regClock := clocktest.New(time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC))
	r, err := registry.New(registry.Options{Backend: regmemory.NewBackend(), Signer: registrytest.NewKeys(t).Signer,
		Metrics: prometheus.NewRegistry(), Clock: regClock})
	if err != nil {
		t.Fatal(err)
	}
	registrytest.Start(t, r)
	var mu sync.Mutex
	var seen []time.Time
	w := wrapped(t, memory.New(memory.Options{}), anchor.FromRegistry(r, caller), anchor.Options{OnRegistryTime: func(at time.Time) {
		mu.Lock()
		seen = append(seen, at)
		mu.Unlock()
	}})
	mu.Lock()
	if len(seen) == 0 || !seen[len(seen)-1].Equal(regClock.Now().Truncate(time.Millisecond)) {
		t.Fatalf("after Open: the registry's times seen %v, want its clock %v", seen, regClock.Now())
	}
	mu.Unlock()
	regClock.Advance(time.Minute)
	if _, err := w.Begin(context.Background(), attempt("acct/t", 1, 1, "p")); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if last := seen[len(seen)-1]; !last.Equal(regClock.Now().Truncate(time.Millisecond)) {
		t.Fatalf("after an anchor step: last registry time %v, want %v", last, regClock.Now())
	}
}
