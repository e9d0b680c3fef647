package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/identity"
)

// slowRegistry is the worker's way to the registry with a manual clock
// for the Holder: an answer to an acquire (POST /v1/leases) comes back
// acquireTakes later on that clock, as the grant of a waiting acquire does
// after the wait; a status read (GET .../status) fails without an answer
// while statusDown is set, and then takes statusTakes.
type slowRegistry struct {
	base  *http.Transport
	clock *fakeClock

	mu           sync.Mutex
	acquireTakes time.Duration
	statusDown   bool
	statusTakes  time.Duration
	statusReads  int
	// beforeStatus, when set, runs once before a status read is sent,
	// with the lease ID it reads.
	beforeStatus func(lease string)
}

func (s *slowRegistry) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	acquire := req.Method == http.MethodPost && req.URL.Path == "/v1/leases"
	status := req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/status")
	if status {
		s.statusReads++
	}
	down, takes := s.statusDown, s.statusTakes
	if acquire {
		takes = s.acquireTakes
	}
	before := s.beforeStatus
	if status {
		s.beforeStatus = nil
	}
	s.mu.Unlock()
	if status && before != nil {
		before(strings.TrimSuffix(strings.TrimPrefix(req.URL.Path, "/v1/leases/"), "/status"))
	}
	if status && down {
		s.clock.Advance(takes)
		return nil, errors.New("test: the registry is unreachable")
	}
	resp, err := s.base.RoundTrip(req)
	if acquire || status {
		s.clock.Advance(takes)
	}
	return resp, err
}

func newSlowRegistry(t *testing.T, clk *fakeClock) *slowRegistry {
	s := &slowRegistry{base: &http.Transport{}, clock: clk}
	t.Cleanup(s.base.CloseIdleConnections)
	return s
}

// TestHoldWaitDoesNotEatTheLease: the wait for the lock is not taken from
// the lease. The grant of a waiting acquire arrives some part of the TTL
// (up to six TTLs: the guide's WithTTL(10s), WithWait(time.Minute) waiting
// a whole minute) after the acquire was sent, on the Holder's clock; the
// Holder that Hold returns is HELD with nearly its whole TTL ahead, and
// its first write is accepted by the sidecar. Before Hold confirmed such
// a grant, it returned a Holder whose local deadline (send time + TTL -
// margin) was near or past: its first write was refused locally with
// OWNERSHIP_UNKNOWN ("local lease deadline passed").
func TestHoldWaitDoesNotEatTheLease(t *testing.T) {
	s := newStack(t)
	const ttl = 10 * time.Second
	for i, waited := range []float64{0, 0.3, 0.46, 0.89, 0.9, 0.95, 1, 6} {
		t.Run(fmt.Sprintf("waited %.2f TTL", waited), func(t *testing.T) {
			clk := newFakeClock()
			reg := newSlowRegistry(t, clk)
			reg.acquireTakes = time.Duration(waited * float64(ttl))
			w, err := client.New(s.regFault.URL(), client.WithHTTPClient(&http.Client{Transport: reg}),
				client.WithIdentityHeader(identity.DefaultHeader, "worker-a"))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			id := fmt.Sprintf("wait-%d", i)
			h, err := w.Hold(ctx, "batch/"+id, client.WithTTL(ttl), client.WithWait(time.Minute), client.WithClock(clk))
			if err != nil {
				t.Fatalf("Hold: %v", err)
			}
			defer h.Release(ctx)
			if st, uerr := h.State(), h.Usable(); st != client.StateHeld || uerr != nil {
				t.Fatalf("Hold returned a Holder in state %s (usable: %v), want HELD", st, uerr)
			}
			// Nearly the whole usable lease (TTL - margin) ahead: what the
			// registry confirmed, less the real time since the grant.
			if left := h.Deadline().Sub(clk.Now()); left < ttl-ttl/10-time.Second {
				t.Fatalf("%s of the lease left after Hold, want about %s", left, ttl-ttl/10)
			}
			resp, err := h.Transport(client.WithHeader(identity.DefaultHeader, "worker-a")).Client().Do(s.put(ctx, batchPath+id, "first write"))
			if err == nil {
				err = client.ResponseError(resp)
				resp.Body.Close()
			}
			if err != nil || resp.Header.Get(fencegate.HeaderReceipt) == "" {
				t.Fatalf("the first write: %v, want accepted", err)
			}
		})
	}
}

// TestHoldUnconfirmedAfterWait: a waiting acquire's grant came back too
// late to use as it is, and the registry cannot be asked for its status:
// Hold does not hand out a Holder it cannot confirm. It returns a
// *StateError (ErrNotHolding) once a grant never renewed must have
// expired, and releases the lease, so the resource is free at once.
func TestHoldUnconfirmedAfterWait(t *testing.T) {
	s := newStack(t)
	const ttl = 10 * time.Second
	clk := newFakeClock()
	reg := newSlowRegistry(t, clk)
	reg.acquireTakes = ttl
	reg.statusDown, reg.statusTakes = true, ttl+ttl/10
	w, err := client.New(s.regFault.URL(), client.WithHTTPClient(&http.Client{Transport: reg}),
		client.WithIdentityHeader(identity.DefaultHeader, "worker-a"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	h, err := w.Hold(ctx, "batch/unconfirmed", client.WithTTL(ttl), client.WithWait(time.Minute), client.WithClock(clk))
	var se *client.StateError
	if h != nil || !errors.Is(err, client.ErrNotHolding) || !errors.As(err, &se) {
		t.Fatalf("Hold: a Holder: %t, %v; want no Holder and a *StateError", h != nil, err)
	}
	if reg.statusReads == 0 {
		t.Fatal("Hold did not ask the registry to confirm the grant")
	}
	res, err := s.direct(t, "worker-a").Resource(ctx, "batch/unconfirmed")
	if err != nil || res.LastFence != 1 || res.Holder == nil || res.Holder.State != fencegate.StateReleased {
		t.Fatalf("the resource after Hold gave up: %+v (%v), want granted once and released", res, err)
	}
	b, err := s.mustWorker(t, "worker-b").Hold(ctx, "batch/unconfirmed")
	if err != nil {
		t.Fatalf("another worker, without waiting: %v", err)
	}
	b.Release(ctx)
}

// TestHoldAcquiresAgainWhenTheGrantEndedUnconfirmed: the grant of a
// waiting acquire came back late, and by the time Hold asks the registry
// to confirm it the lease is over (here released behind its back; on a
// machine too slow for the TTL, expired). The registry's word makes it
// certain that nothing of that grant runs, so Hold acquires again under a
// new request ID and returns a Holder of the second grant. With the
// caller's own request ID (which names the ended grant) it cannot: it
// returns a *StateError in the final state.
func TestHoldAcquiresAgainWhenTheGrantEndedUnconfirmed(t *testing.T) {
	s := newStack(t)
	const ttl = 10 * time.Second
	ctx := context.Background()
	direct := s.direct(t, "worker-a")
	for _, own := range []bool{false, true} {
		t.Run(fmt.Sprintf("own request ID %v", own), func(t *testing.T) {
			clk := newFakeClock()
			reg := newSlowRegistry(t, clk)
			reg.acquireTakes = ttl
			var ended []string
			reg.beforeStatus = func(lease string) {
				ended = append(ended, lease)
				if _, err := direct.Release(ctx, lease); err != nil {
					t.Errorf("releasing %s behind the Holder's back: %v", lease, err)
				}
				reg.mu.Lock()
				reg.acquireTakes = 0 // the next grant comes at once
				reg.mu.Unlock()
			}
			w, err := client.New(s.regFault.URL(), client.WithHTTPClient(&http.Client{Transport: reg}),
				client.WithIdentityHeader(identity.DefaultHeader, "worker-a"))
			if err != nil {
				t.Fatal(err)
			}
			resource := fmt.Sprintf("batch/ended-%v", own)
			opts := []client.HoldOption{client.WithTTL(ttl), client.WithWait(time.Minute), client.WithClock(clk)}
			if own {
				opts = append(opts, client.WithRequestID("req-own"))
			}
			h, err := w.Hold(ctx, resource, opts...)
			if own {
				var se *client.StateError
				if h != nil || !errors.As(err, &se) || se.State != client.StateReleased {
					t.Fatalf("Hold with its own request ID: a Holder %t, %v; want a *StateError RELEASED", h != nil, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Hold: %v", err)
			}
			defer h.Release(ctx)
			if len(ended) != 1 || h.LeaseID() == ended[0] || h.Fence() != 2 || h.State() != client.StateHeld {
				t.Fatalf("Holder of lease %s fence %d (%s); ended %v: want the second grant, HELD", h.LeaseID(), h.Fence(), h.State(), ended)
			}
		})
	}
}
