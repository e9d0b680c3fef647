package client_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/identity"
)

// TestWithoutBackground: a Holder that starts no goroutine renews only when
// asked (Renew), still takes its lease out of use at the local deadline
// when something looks, and writes through its Transport as any Holder.
func TestWithoutBackground(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	clock := newFakeClock()
	c := s.mustWorker(t, "worker-a")
	if _, err := c.Hold(ctx, "batch/manual-life", client.WithoutBackground(), client.WithLifetime(ctx)); err == nil {
		t.Fatal("WithoutBackground and WithLifetime together were accepted")
	}
	h, err := c.Hold(ctx, "batch/manual", client.WithTTL(10*time.Second), client.WithClock(clock), client.WithoutBackground())
	if err != nil {
		t.Fatal(err)
	}
	first, err := s.direct(t, "worker-a").Status(ctx, h.LeaseID())
	if err != nil {
		t.Fatal(err)
	}
	// Past the renewal point nothing renews by itself.
	clock.Advance(5 * time.Second)
	l, err := s.direct(t, "worker-a").Status(ctx, h.LeaseID())
	if err != nil || !l.ExpiresAt.Equal(first.ExpiresAt) {
		t.Fatalf("the lease was renewed without Renew: expiry %s then %s (%v)", first.ExpiresAt, l.ExpiresAt, err)
	}
	before := h.Deadline()
	if st, err := h.Renew(ctx); err != nil || st != client.StateHeld {
		t.Fatalf("Renew = %s, %v", st, err)
	}
	if !h.Deadline().After(before) {
		t.Fatalf("Renew did not extend the local deadline (%s then %s)", before, h.Deadline())
	}
	tr := h.Transport(client.WithHeader(identity.DefaultHeader, "worker-a"))
	resp, err := verdict(tr.RoundTrip(s.put(ctx, batchPath+"manual", "x")))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get(fencegate.HeaderReceipt) == "" {
		t.Fatalf("write: %d, receipt %q", resp.StatusCode, resp.Header.Get(fencegate.HeaderReceipt))
	}
	// The local deadline still brakes, on the next look.
	clock.Advance(10 * time.Second)
	if st := h.State(); st != client.StateOwnershipUnknown {
		t.Fatalf("state past the local deadline = %s, want OWNERSHIP_UNKNOWN", st)
	}
	if _, err := verdict(tr.RoundTrip(s.put(ctx, batchPath+"manual", "y"))); !errors.Is(err, client.ErrNotHolding) {
		t.Fatalf("write past the local deadline: %v", err)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := h.Renew(ctx); err == nil || st != client.StateReleased {
		t.Fatalf("Renew after Release = %s, %v", st, err)
	}
	// A keeper arms a timer before it can see the stop of Release (which
	// waits for it), so a Holder with one would have armed at least once.
	if n := clock.Armed(); n != 0 {
		t.Fatalf("%d timers armed: the Holder ran a keeper", n)
	}
}
