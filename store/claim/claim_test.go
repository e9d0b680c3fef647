package claim_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/registry/registrytest"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/claim"
	storememory "github.com/fencegate/fencegate/store/memory"
)

const resource = "fencegate-store/billing"

// startRegistry serves a real registry over HTTP and returns its URL.
func startRegistry(t *testing.T) string {
	t.Helper()
	srv, _ := registrytest.Serve(t)
	return srv.URL
}

func sidecar(t *testing.T, url, name string) *client.Client {
	t.Helper()
	c, err := client.New(url, client.WithIdentityHeader(identity.DefaultHeader, name))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func take(t *testing.T, c *client.Client, ttl time.Duration) (*claim.Claim, error) {
	t.Helper()
	return claim.Take(claim.Options{Client: c, Service: "billing", Resource: resource, TTL: ttl, Backend: "bolt"})
}

// waitHeld waits until the claim's Held answers as want.
func waitHeld(t *testing.T, c *claim.Claim, want bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for (c.Held() == nil) != want {
		if time.Now().After(deadline) {
			t.Fatalf("the claim's Held() = %v after 30s, want held=%v", c.Held(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestGuardBeginsOnlyWhileTheClaimIsHeld: a guarded store passes Begin to
// the store while the claim is held (a bad input then reaches the store's
// own validation), and refuses it without reaching the store once the
// claim's lease was released behind the sidecar's back; Run claims the
// service again, and Begin reaches the store again.
func TestGuardBeginsOnlyWhileTheClaimIsHeld(t *testing.T) {
	url := startRegistry(t)
	a := sidecar(t, url, "sidecar-a")
	c, err := take(t, a, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	st := claim.Guard(storememory.New(storememory.Options{}), c)
	defer st.Close()
	ctx := context.Background()

	if _, err := st.Begin(ctx, store.BeginInput{}); !errors.Is(err, store.ErrInvalidInput) {
		t.Fatalf("Begin while the claim is held: %v, want the store's own ErrInvalidInput", err)
	}

	// Behind the sidecar's back: its lease is released at the registry.
	if _, err := a.Release(ctx, c.Holder().LeaseID()); err != nil {
		t.Fatal(err)
	}
	_, _ = c.Holder().Check(ctx) // only to learn of the release sooner
	waitHeld(t, c, false)
	_, err = st.Begin(ctx, store.BeginInput{})
	if err == nil || errors.Is(err, store.ErrInvalidInput) || !strings.Contains(err.Error(), "not claimed by this sidecar") {
		t.Fatalf("Begin after the claim was lost: %v, want the claim's refusal before the store", err)
	}

	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	waitHeld(t, c, true)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
	if _, err := st.Begin(ctx, store.BeginInput{}); !errors.Is(err, store.ErrInvalidInput) {
		t.Fatalf("Begin after the claim was taken again: %v, want the store's own ErrInvalidInput", err)
	}
}

// TestTakeFailsWhileAnotherSidecarHolds: a second sidecar of the service
// waits up to one claim TTL and then fails, naming the service; once the
// first releases, it claims at once.
func TestTakeFailsWhileAnotherSidecarHolds(t *testing.T) {
	url := startRegistry(t)
	first, err := take(t, sidecar(t, url, "sidecar-a"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	b := sidecar(t, url, "sidecar-b")
	_, err = take(t, b, 200*time.Millisecond)
	if !errors.Is(err, client.ErrLeaseHeld) || !strings.Contains(err.Error(), `store.service "billing" is claimed by another sidecar`) {
		t.Fatalf("Take while another sidecar holds the claim: %v", err)
	}
	first.Release()
	second, err := take(t, b, time.Minute)
	if err != nil {
		t.Fatalf("Take after the first released: %v", err)
	}
	second.Release()
}
