package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/internal/faultproxy"
	"github.com/fencegate/fencegate/registry/registrytest"
)

// contextRegistry is a real registry over HTTP (loopback admin calls
// allowed) behind a fault proxy, and a worker's client through the proxy.
func contextRegistry(t *testing.T) (*faultproxy.Proxy, *client.Client, *client.Client) {
	t.Helper()
	srv, _ := registrytest.Serve(t)
	fp, err := faultproxy.Start(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fp.Close() })
	worker, err := client.New(fp.URL(), client.WithIdentityHeader(identity.DefaultHeader, "worker-a"))
	if err != nil {
		t.Fatal(err)
	}
	admin, err := client.New(srv.URL, client.WithIdentityHeader(identity.DefaultHeader, "operator"))
	if err != nil {
		t.Fatal(err)
	}
	return fp, worker, admin
}

// lost reports whether ctx is cancelled, without waiting.
func lost(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

// wantLost checks that ctx is cancelled with a *StateError in state st.
func wantLost(t *testing.T, ctx context.Context, st client.State, cause error) {
	t.Helper()
	if !lost(ctx) {
		t.Fatal("the Holder's Context is not cancelled")
	}
	var se *client.StateError
	c := context.Cause(ctx)
	if !errors.Is(ctx.Err(), context.Canceled) || !errors.As(c, &se) || se.State != st || !errors.Is(c, client.ErrNotHolding) {
		t.Fatalf("cancelled with %v (cause %v), want a *StateError in %s", ctx.Err(), c, st)
	}
	if cause != nil && !errors.Is(c, cause) {
		t.Fatalf("cause %v, want %v", c, cause)
	}
}

// TestHolderContextReleased: the Context lives while the lease is held
// and ends with the release.
func TestHolderContextReleased(t *testing.T) {
	_, worker, _ := contextRegistry(t)
	ctx := context.Background()
	h, err := worker.Hold(ctx, "batch/ctx-release", client.WithTTL(10*time.Second), client.WithClock(newFakeClock()))
	if err != nil {
		t.Fatal(err)
	}
	hctx := h.Context()
	if lost(hctx) {
		t.Fatalf("the Context of a HELD lease is cancelled: %v", context.Cause(hctx))
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wantLost(t, hctx, client.StateReleased, nil)
}

// TestHolderContextRevoked: an operator revokes every lease (an issuer
// epoch bump); the Holder learns it from the registry and its Context
// ends, EXPIRED.
func TestHolderContextRevoked(t *testing.T) {
	_, worker, admin := contextRegistry(t)
	ctx := context.Background()
	h, err := worker.Hold(ctx, "batch/ctx-revoke", client.WithTTL(10*time.Second), client.WithClock(newFakeClock()))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	if _, err := admin.BumpEpoch(ctx); err != nil {
		t.Fatal(err)
	}
	if lost(h.Context()) {
		t.Fatal("cancelled before the Holder heard of the revocation")
	}
	if st, err := h.Check(ctx); st != client.StateExpired {
		t.Fatalf("after the revocation the registry says %s (%v), want EXPIRED", st, err)
	}
	wantLost(t, h.Context(), client.StateExpired, nil)
}

// TestHolderContextRidesOutOutage: renewals that fail while the local
// deadline is ahead do not end the Context (the Holder refuses effects
// meanwhile and is HELD again once the registry answers); renewals that
// keep failing until the local deadline do, with ErrLocalDeadline.
func TestHolderContextRidesOutOutage(t *testing.T) {
	fp, worker, _ := contextRegistry(t)
	ctx := context.Background()
	clk := newFakeClock()
	h, err := worker.Hold(ctx, "batch/ctx-outage", client.WithTTL(10*time.Second), client.WithClock(clk), client.WithJitter(0))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	hctx := h.Context()

	fp.SetMode(faultproxy.Refuse)
	clk.advanceIdle(t, 4*time.Second) // the renewal is refused
	waitState(t, h, 5*time.Second, client.StateOwnershipUnknown)
	if lost(hctx) {
		t.Fatalf("an uncertain renewal with the deadline ahead cancelled the Context: %v", context.Cause(hctx))
	}
	fp.SetMode(faultproxy.Pass)
	clk.stepUntil(t, 100*time.Millisecond, "HELD again", func() bool { return h.State() == client.StateHeld })
	if lost(hctx) {
		t.Fatalf("cancelled after riding out the outage: %v", context.Cause(hctx))
	}

	fp.SetMode(faultproxy.Refuse)
	clk.stepUntil(t, 500*time.Millisecond, "the Context's end", func() bool { return lost(hctx) })
	wantLost(t, hctx, client.StateOwnershipUnknown, client.ErrLocalDeadline)
	if h.Deadline().After(clk.Now()) {
		t.Fatalf("cancelled with the local deadline %s still ahead (now %s)", h.Deadline(), clk.Now())
	}
}

// TestHolderContextEndsAtTheDeadlineUnwatched: with ownership already
// unknown (a refused renewal) and the next retry far off, nothing looks
// at the Holder; its keeper still wakes at the local deadline, so the
// Context ends then, not at the next retry or the next look.
func TestHolderContextEndsAtTheDeadlineUnwatched(t *testing.T) {
	fp, worker, _ := contextRegistry(t)
	ctx := context.Background()
	clk := newFakeClock()
	h, err := worker.Hold(ctx, "batch/ctx-unwatched", client.WithTTL(10*time.Second), client.WithClock(clk),
		client.WithJitter(0), client.WithRetryInterval(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	hctx := h.Context()
	fp.SetMode(faultproxy.Refuse)
	clk.advanceIdle(t, 4*time.Second) // the renewal is refused
	waitState(t, h, 5*time.Second, client.StateOwnershipUnknown)
	if lost(hctx) {
		t.Fatalf("cancelled with the deadline ahead: %v", context.Cause(hctx))
	}
	clk.advanceIdle(t, 6*time.Second) // past the deadline (9 s), long before the retry
	waitFor(t, 5*time.Second, "the Context's end at the deadline", func() bool { return lost(hctx) })
	wantLost(t, hctx, client.StateOwnershipUnknown, client.ErrLocalDeadline)
}
