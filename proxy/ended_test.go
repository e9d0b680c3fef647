package proxy_test

import (
	"context"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/proxy"
	"github.com/fencegate/fencegate/registry"
)

// withProofRouteOnItems adds a proof-mode route on the same resources as
// the registry-mode PUT /v1/items/{id}.
func withProofRouteOnItems(c *proxy.Config) {
	c.Routes = append(c.Routes, proxy.RouteConfig{Method: "PATCH", Path: "/v1/items/{id}", Resource: "item/{id}",
		Status: proxy.RouteStatus{Mode: proxy.StatusProof, MaxAge: 5 * time.Second}})
}

// TestReleasedGrantProofRefusedOnceLearned: a worker releases its lease
// early but still holds a fresh HELD proof. Once the sidecar has learned
// from the registry (a registry-mode request with that grant) that the
// grant ended, the proof is refused on proof-mode routes, and nothing
// reaches the backend or the store.
func TestReleasedGrantProofRefusedOnceLearned(t *testing.T) {
	f := newFixture(t, withProofRouteOnItems)
	ctx := context.Background()
	a, err := f.reg.Acquire(ctx, registry.AcquireRequest{Resource: "item/r1", Owner: "worker-a", RequestID: "a", TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	proof := string(a.Status) // HELD, fresh for maxProofTTL
	if _, err := f.reg.Release(ctx, "worker-a", a.View.Lease.Lease); err != nil {
		t.Fatal(err)
	}
	// The registry-mode route asks the registry and learns of the release.
	f.do(call{path: "/v1/items/r1", owner: "worker-a", grant: string(a.Grant), body: "x"}).expect(t, 403, fencegate.CodeGrantNotHeld)
	// The proof-mode route now refuses the still-fresh HELD proof.
	f.do(call{method: "PATCH", path: "/v1/items/r1", owner: "worker-a", grant: string(a.Grant), status: proof, body: "y"}).
		expect(t, 403, fencegate.CodeGrantNotHeld)
	if n := f.back.count(); n != 0 {
		t.Fatalf("backend received %d requests, want 0", n)
	}
	if _, found := f.record("item/r1"); found {
		t.Fatal("a refused grant touched the store")
	}
}

// TestHeldGrantProofStillAccepted: learning is per grant; a grant the
// registry says is HELD keeps working in proof mode.
func TestHeldGrantProofStillAccepted(t *testing.T) {
	f := newFixture(t, withProofRouteOnItems)
	ctx := context.Background()
	a, err := f.reg.Acquire(ctx, registry.AcquireRequest{Resource: "item/r2", Owner: "worker-a", RequestID: "a", TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	f.do(call{path: "/v1/items/r2", owner: "worker-a", grant: string(a.Grant), body: "1"}).expect(t, 201, "")
	f.do(call{method: "PATCH", path: "/v1/items/r2", owner: "worker-a", grant: string(a.Grant), status: string(a.Status), seg: "2", body: "2"}).
		expect(t, 201, "")
}
