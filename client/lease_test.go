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
	"github.com/fencegate/fencegate/internal/faultproxy"
)

// TestHoldRenewRelease walks the normal course of the state machine on a
// fake clock: REQUESTED -> HELD -> RENEWING -> HELD -> RELEASED, every step
// driven by a registry answer.
func TestHoldRenewRelease(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	clock := newFakeClock()
	var rec recorder
	c := s.mustWorker(t, "worker-a")
	h, err := c.Hold(ctx, "batch/renew", client.WithTTL(10*time.Second), client.WithClock(clock),
		client.WithJitter(0), client.WithOnTransition(rec.record))
	if err != nil {
		t.Fatal(err)
	}
	if st := h.State(); st != client.StateHeld {
		t.Fatalf("state after Hold = %s, want HELD", st)
	}
	if h.Fence() == 0 || h.OperationRoot() == "" || h.Grant() == "" || h.LeaseID() == "" {
		t.Fatalf("holder lacks grant fields: fence %d root %q lease %q", h.Fence(), h.OperationRoot(), h.LeaseID())
	}
	before := h.Deadline()
	first, err := s.direct(t, "worker-a").Status(ctx, h.LeaseID())
	if err != nil {
		t.Fatal(err)
	}

	clock.advanceIdle(t, 4*time.Second) // past TTL/3: renew
	waitFor(t, 5*time.Second, "a renewal to extend the local deadline", func() bool { return h.Deadline().After(before) })
	if st := waitState(t, h, 5*time.Second, client.StateHeld); st != client.StateHeld {
		t.Fatalf("state = %s", st)
	}
	if want := clock.Now().Add(10*time.Second - time.Second); h.Deadline().After(want) {
		t.Fatalf("deadline %s is later than renewal sent + TTL - margin = %s", h.Deadline(), want)
	}
	after, err := s.direct(t, "worker-a").Status(ctx, h.LeaseID())
	if err != nil {
		t.Fatal(err)
	}
	// The registry keeps expiries in whole milliseconds, so a renewal within
	// the acquire's millisecond may leave the expiry equal: the renewal is
	// proven by the revision it wrote, and the expiry never goes back.
	if after.ExpiresAt.Before(first.ExpiresAt) || proofRevision(t, after.Status) <= proofRevision(t, first.Status) {
		t.Fatalf("no renewal at the registry: expiry %s then %s, revision %d then %d", first.ExpiresAt, after.ExpiresAt,
			proofRevision(t, first.Status), proofRevision(t, after.Status))
	}

	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if st := h.State(); st != client.StateReleased {
		t.Fatalf("state after Release = %s", st)
	}
	<-h.Done()
	l, err := s.direct(t, "worker-a").Status(ctx, h.LeaseID())
	if err != nil || l.State != "RELEASED" {
		t.Fatalf("registry says %v, %v; want RELEASED", l.State, err)
	}
	waitFor(t, 5*time.Second, "the RELEASED callback", func() bool { return rec.saw(client.StateReleased) })
	want := []client.State{client.StateRequested, client.StateHeld, client.StateRenewing, client.StateHeld, client.StateReleased}
	if got := rec.states(); !equalStates(got, want) {
		t.Fatalf("transitions %v, want %v", got, want)
	}

	// After the release nothing is sent.
	before2 := s.sidecarFP.Stats().Accepted
	_, err = verdict(h.Transport(client.WithHeader(identity.DefaultHeader, "worker-a")).RoundTrip(s.put(ctx, batchPath+"renew", "late")))
	var se *client.StateError
	if !errors.As(err, &se) || se.State != client.StateReleased || !errors.Is(err, client.ErrNotHolding) {
		t.Fatalf("write after release: %v, want a StateError RELEASED", err)
	}
	if got := s.sidecarFP.Stats().Accepted; got != before2 {
		t.Fatal("a write after release reached the sidecar")
	}
}

func equalStates(a, b []client.State) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestLocalDeadlineIsABrake: with the registry unreachable, the local
// deadline passing takes the lease out of use (OWNERSHIP_UNKNOWN, the
// Transport refuses without I/O); only the registry's answer brings it back.
func TestLocalDeadlineIsABrake(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	clock := newFakeClock()
	c := s.mustWorker(t, "worker-a")
	h, err := c.Hold(ctx, "batch/brake", client.WithTTL(10*time.Second), client.WithClock(clock), client.WithRenewFraction(0.9))
	if err != nil {
		t.Fatal(err)
	}
	tr := h.Transport(client.WithHeader(identity.DefaultHeader, "worker-a"))
	s.regFault.SetMode(faultproxy.Refuse)
	clock.advanceIdle(t, 9500*time.Millisecond) // past TTL - margin (9 s), the renewal is refused
	if st := waitState(t, h, 5*time.Second, client.StateOwnershipUnknown); st != client.StateOwnershipUnknown {
		t.Fatal(st)
	}
	if err := h.Usable(); !errors.Is(err, client.ErrNotHolding) {
		t.Fatalf("Usable = %v", err)
	}
	accepted := s.sidecarFP.Stats().Accepted
	_, err = verdict(tr.RoundTrip(s.put(ctx, batchPath+"brake", "x")))
	if !errors.Is(err, client.ErrNotHolding) {
		t.Fatalf("write in OWNERSHIP_UNKNOWN: %v", err)
	}
	if s.sidecarFP.Stats().Accepted != accepted || len(s.backend.all()) != 0 {
		t.Fatal("a write in OWNERSHIP_UNKNOWN reached the sidecar")
	}

	// The registry answers again (the lease is still held on its clock).
	s.regFault.SetMode(faultproxy.Pass)
	clock.stepUntil(t, 500*time.Millisecond, "HELD again", func() bool { return h.State() == client.StateHeld }) // the keeper's retries
	resp, err := verdict(tr.RoundTrip(s.put(ctx, batchPath+"brake", "x")))
	if err != nil {
		t.Fatalf("write after recovery: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get(fencegate.HeaderReceipt) == "" {
		t.Fatalf("write after recovery: %d, receipt %q", resp.StatusCode, resp.Header.Get(fencegate.HeaderReceipt))
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestLifetimeReleases: a Holder tied to a context releases its lease when
// the context ends.
func TestLifetimeReleases(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	life, cancel := context.WithCancel(ctx)
	h, err := s.mustWorker(t, "worker-a").Hold(ctx, "batch/lifetime", client.WithTTL(10*time.Second), client.WithLifetime(life))
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	waitState(t, h, 5*time.Second, client.StateReleased)
	if l, err := s.direct(t, "worker-a").Status(ctx, h.LeaseID()); err != nil || l.State != "RELEASED" {
		t.Fatalf("registry: %v %v", l.State, err)
	}
}
