package client_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/internal/faultproxy"
)

// TestLostAcquireResponse: the registry grants, the answer is lost on the
// way back. The SDK recovers the grant by looking up the same request ID:
// same lease, same fence, and the registry issued no second grant.
func TestLostAcquireResponse(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	c := s.mustWorker(t, "worker-a")
	s.regFault.SetModeN(faultproxy.DropResponse, 1)
	var rec recorder
	h, err := c.Hold(ctx, "batch/lost-acquire", client.WithTTL(5*time.Second), client.WithRequestID("req-lost-acquire"),
		client.WithOnTransition(rec.record))
	if err != nil {
		t.Fatalf("Hold: %v", err)
	}
	defer h.Release(ctx)
	if got := s.regFault.Stats().DroppedResponses; got != 1 {
		t.Fatalf("dropped responses = %d, want 1 (the acquire's)", got)
	}
	if h.RequestID() != "req-lost-acquire" {
		t.Fatalf("request ID %q: a second identity was used", h.RequestID())
	}
	reg := s.direct(t, "worker-a")
	res, err := reg.Resource(ctx, "batch/lost-acquire")
	if err != nil {
		t.Fatal(err)
	}
	if res.LastFence != h.Fence() || res.Holder == nil || res.Holder.Lease != h.LeaseID() {
		t.Fatalf("registry: last fence %d holder %+v; holder has fence %d lease %s: a second grant was issued",
			res.LastFence, res.Holder, h.Fence(), h.LeaseID())
	}
	l, err := reg.Lookup(ctx, "req-lost-acquire")
	if err != nil || l.Lease != h.LeaseID() || l.FenceToken != h.Fence() {
		t.Fatalf("lookup of the request ID: %+v, %v", l, err)
	}
	if st := h.State(); st != client.StateHeld {
		t.Fatalf("state %s", st)
	}
	// And the recovered grant works at the sidecar.
	resp, err := verdict(h.Transport(client.WithHeader(identity.DefaultHeader, "worker-a")).RoundTrip(s.put(ctx, batchPath+"lost-acquire", "v1")))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get(fencegate.HeaderReceipt) == "" {
		t.Fatalf("no receipt: %d", resp.StatusCode)
	}
}

// TestLostAcquireLookupImpossible: the acquire's answer is lost and the
// registry then becomes unreachable, so the request ID cannot be looked
// up. The SDK waits out the old attempt's TTL and reports it; it never
// tries another request ID.
func TestLostAcquireLookupImpossible(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	c := s.mustWorker(t, "worker-a")
	s.regFault.SetModeThen(faultproxy.DropResponse, 1, faultproxy.Refuse)
	const ttl = 300 * time.Millisecond
	start := time.Now()
	_, err := c.Hold(ctx, "batch/lost-lookup", client.WithTTL(ttl), client.WithRequestID("req-lookup-impossible"))
	var ae *client.AcquireUnknownError
	if !errors.Is(err, client.ErrAcquireUnknown) || !errors.As(err, &ae) {
		t.Fatalf("Hold: %v, want an AcquireUnknownError", err)
	}
	if ae.RequestID != "req-lookup-impossible" {
		t.Fatalf("reported request %q", ae.RequestID)
	}
	if ae.SafeAfter.Sub(ae.SentAt) < ttl {
		t.Fatalf("safe after %s, only %s after the attempt", ae.SafeAfter, ae.SafeAfter.Sub(ae.SentAt))
	}
	if time.Now().Before(ae.SafeAfter) || time.Since(start) < ttl {
		t.Fatalf("returned before the old attempt's TTL ran out (safe after %s)", ae.SafeAfter)
	}
	if s.regFault.Stats().RefusedConnections == 0 {
		t.Fatal("no lookup was tried")
	}
	// The registry granted exactly once, to the lost request ID.
	s.regFault.SetMode(faultproxy.Pass)
	res, err := s.direct(t, "worker-a").Resource(ctx, "batch/lost-lookup")
	if err != nil {
		t.Fatal(err)
	}
	if res.LastFence != 1 || res.Holder == nil || res.Holder.RequestID != "req-lookup-impossible" {
		t.Fatalf("registry: last fence %d holder %+v: want one grant, to the lost request", res.LastFence, res.Holder)
	}
}

// TestLostRenewalResponse: the registry renews, the answer is lost. The
// Holder moves to OWNERSHIP_UNKNOWN (the Transport refuses without I/O)
// and back to HELD only when the registry answers a later renewal.
func TestLostRenewalResponse(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	clock := newFakeClock()
	var rec recorder
	c := s.mustWorker(t, "worker-a")
	h, err := c.Hold(ctx, "batch/lost-renewal", client.WithTTL(10*time.Second), client.WithClock(clock),
		client.WithJitter(0), client.WithOnTransition(rec.record))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	tr := h.Transport(client.WithHeader(identity.DefaultHeader, "worker-a"))
	before, err := s.direct(t, "worker-a").Status(ctx, h.LeaseID())
	if err != nil {
		t.Fatal(err)
	}

	s.regFault.SetModeN(faultproxy.DropResponse, 1)
	clock.advanceIdle(t, 4*time.Second) // the renewal goes out; its answer is lost
	waitState(t, h, 5*time.Second, client.StateOwnershipUnknown)
	if s.regFault.Stats().DroppedResponses != 1 {
		t.Fatal("the renewal's answer was not the one dropped")
	}
	after, err := s.direct(t, "worker-a").Status(ctx, h.LeaseID())
	if err != nil {
		t.Fatal(err)
	}
	// The renewal is the only write since before: the registry's revision
	// (stated by each status proof) moved. The expiry alone does not show
	// it: the registry keeps times in milliseconds, and a renewal decided
	// in the same millisecond as the acquire yields the same expiry.
	if revBefore, revAfter := proofRevision(t, before.Status), proofRevision(t, after.Status); revAfter <= revBefore ||
		after.ExpiresAt.Before(before.ExpiresAt) || after.State != fencegate.StateHeld {
		t.Fatalf("the registry did not apply the renewal whose answer was lost: revision %d -> %d, expiry %s -> %s, state %s",
			revBefore, revAfter, before.ExpiresAt, after.ExpiresAt, after.State)
	}
	accepted := s.sidecarFP.Stats().Accepted
	if _, err := verdict(tr.RoundTrip(s.put(ctx, batchPath+"lost-renewal", "x"))); !errors.Is(err, client.ErrNotHolding) {
		t.Fatalf("write while ownership is unknown: %v", err)
	}
	if s.sidecarFP.Stats().Accepted != accepted {
		t.Fatal("a write while ownership was unknown reached the sidecar")
	}

	clock.stepUntil(t, 500*time.Millisecond, "HELD again", func() bool { return h.State() == client.StateHeld }) // the keeper asks again; this answer arrives
	resp, err := verdict(tr.RoundTrip(s.put(ctx, batchPath+"lost-renewal", "x")))
	if err != nil {
		t.Fatalf("write after HELD again: %v", err)
	}
	resp.Body.Close()
	waitFor(t, 5*time.Second, "the callbacks", func() bool {
		states := rec.states()
		iu := indexOf(states, client.StateOwnershipUnknown)
		return iu >= 0 && indexOf(states[iu:], client.StateHeld) >= 0
	})
	want := []client.State{client.StateRequested, client.StateHeld, client.StateRenewing, client.StateOwnershipUnknown, client.StateHeld}
	if got := rec.states(); !equalStates(got, want) {
		t.Fatalf("transitions %v, want %v", got, want)
	}
}

// proofRevision is the backendRevision a lockStatus.v1 proof states: the
// registry's revision at the read, which every registry write increments.
// (The proof comes straight from the registry; only its claims are read.)
func proofRevision(t *testing.T, proof string) uint64 {
	t.Helper()
	parts := strings.Split(proof, ".")
	if len(parts) != 3 {
		t.Fatalf("status proof %q is not a compact JWS", proof)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatalf("status proof payload: %v", err)
	}
	var st fencegate.Status
	if err := json.Unmarshal(raw, &st); err != nil || st.Schema != fencegate.StatusSchema {
		t.Fatalf("status proof claims %s: %v", raw, err)
	}
	return st.BackendRevision
}

func indexOf(s []client.State, st client.State) int {
	for i, x := range s {
		if x == st {
			return i
		}
	}
	return -1
}

// TestLostRenewalThenExpired: the renewal's answer is lost and the
// registry stays unreachable past the TTL; another worker takes over. When
// the registry answers again it says EXPIRED, and the Holder is EXPIRED,
// having never gone back to HELD.
func TestLostRenewalThenExpired(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	const ttl = 300 * time.Millisecond
	var rec recorder
	c := s.mustWorker(t, "worker-a")
	s.regFault.SetMode(faultproxy.Pass)
	h, err := c.Hold(ctx, "batch/renewal-expired", client.WithTTL(ttl), client.WithOnTransition(rec.record))
	if err != nil {
		t.Fatal(err)
	}
	s.regFault.SetModeThen(faultproxy.DropResponse, 1, faultproxy.Refuse)
	waitState(t, h, 5*time.Second, client.StateOwnershipUnknown)

	// worker-b waits for the lease and gets it when it expires.
	b, err := s.direct(t, "worker-b").Acquire(ctx, client.AcquireRequest{Resource: "batch/renewal-expired", RequestID: "b-1", TTL: 5 * time.Second, Wait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if b.FenceToken <= h.Fence() {
		t.Fatalf("worker-b's fence %d is not above %d", b.FenceToken, h.Fence())
	}
	if st := h.State(); st != client.StateOwnershipUnknown {
		t.Fatalf("state %s while the registry is unreachable", st)
	}
	s.regFault.SetMode(faultproxy.Pass)
	waitState(t, h, 5*time.Second, client.StateExpired)
	<-h.Done()
	waitFor(t, 5*time.Second, "the EXPIRED callback", func() bool { return rec.saw(client.StateExpired) })
	states := rec.states()
	iu := indexOf(states, client.StateOwnershipUnknown)
	if iu < 0 || indexOf(states[iu:], client.StateHeld) >= 0 || states[len(states)-1] != client.StateExpired {
		t.Fatalf("transitions %v: want OWNERSHIP_UNKNOWN, never HELD again, then EXPIRED", states)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatalf("Release of an expired lease: %v", err)
	}
}

// TestRenewalDuringRegistryOutage: the registry is down at renewal time.
// The Holder moves to OWNERSHIP_UNKNOWN and the Transport refuses locally,
// without any I/O; the registry's return brings it back to HELD.
func TestRenewalDuringRegistryOutage(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	clock := newFakeClock()
	c := s.mustWorker(t, "worker-a")
	h, err := c.Hold(ctx, "batch/outage", client.WithTTL(10*time.Second), client.WithClock(clock), client.WithJitter(0))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	tr := h.Transport(client.WithHeader(identity.DefaultHeader, "worker-a"))
	s.regFault.SetMode(faultproxy.Refuse)
	clock.advanceIdle(t, 4*time.Second)
	waitState(t, h, 5*time.Second, client.StateOwnershipUnknown)
	if !strings.Contains(h.Err().Error(), "renew") {
		t.Fatalf("cause %v, want the failed renewal", h.Err())
	}
	before := s.sidecarFP.Stats()
	for _, seg := range []uint64{1, 2} {
		req := s.put(ctx, batchPath+"outage", "x")
		req = req.WithContext(client.ContextWithSegment(ctx, seg))
		_, err := verdict(tr.RoundTrip(req))
		var se *client.StateError
		if !errors.As(err, &se) || se.State != client.StateOwnershipUnknown {
			t.Fatalf("write during the outage: %v, want a StateError OWNERSHIP_UNKNOWN", err)
		}
	}
	if after := s.sidecarFP.Stats(); after.Accepted != before.Accepted || after.RequestBytes != before.RequestBytes {
		t.Fatal("the Transport did network I/O while ownership was unknown")
	}
	if len(s.backend.all()) != 0 {
		t.Fatal("the backend got a write")
	}
	s.regFault.SetMode(faultproxy.Pass)
	clock.stepUntil(t, 500*time.Millisecond, "HELD again", func() bool { return h.State() == client.StateHeld })
}

// TestLeaseExpiresWhileSegmentInFlight: a long task's segment 2 is in
// flight when the worker loses the registry and its lease runs out. The
// segment already sent is accepted and reported (effects sent are not
// assumed undone); segment 3 is never sent.
func TestLeaseExpiresWhileSegmentInFlight(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	const ttl = 400 * time.Millisecond
	c := s.mustWorker(t, "worker-a")
	h, err := c.Hold(ctx, "batch/in-flight", client.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	reg := s.direct(t, "worker-a")
	s.backend.setHold(func(w write) {
		if w.Segment != "2" {
			return
		}
		// Segment 2 reached the backend: cut the worker off the registry
		// and keep the answer until the registry says the lease expired.
		s.regFault.SetMode(faultproxy.Refuse)
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if l, err := reg.Status(ctx, h.LeaseID()); err == nil && l.State == "EXPIRED" {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	tr := h.Transport(client.WithHeader(identity.DefaultHeader, "worker-a"))
	rep, err := tr.RunSegments(ctx, 3, func(ctx context.Context, seq uint64) (*http.Request, error) {
		return s.put(ctx, batchPath+"in-flight", "part-"+fencegate.FormatSegment(seq)), nil
	})
	if !errors.Is(err, client.ErrNotHolding) {
		t.Fatalf("RunSegments: %v, want ErrNotHolding", err)
	}
	if len(rep.Accepted) != 2 || rep.Accepted[0].Seq != 1 || rep.Accepted[1].Seq != 2 || rep.Accepted[1].Receipt == "" {
		t.Fatalf("accepted %+v, want segments 1 and 2 with receipts", rep.Accepted)
	}
	if rep.Failed == nil || rep.Failed.Seq != 3 || rep.Failed.Sent {
		t.Fatalf("failed %+v, want segment 3, not sent", rep.Failed)
	}
	if got := s.backend.bodies(); len(got) != 2 || got[0] != "part-1" || got[1] != "part-2" {
		t.Fatalf("backend got %q, want part-1 and part-2 only", got)
	}
	s.backend.setHold(nil)
	s.regFault.SetMode(faultproxy.Pass)
	waitState(t, h, 5*time.Second, client.StateExpired)
}

// TestSegmentsStopAtStaleOwner: a worker whose clock says it still holds
// the lease (a frozen fake clock: the "paused" owner's view) sends the
// next segment after another owner took over and wrote. The sidecar says
// STALE_OWNER; the run stops there, reports nothing after it, and the
// Holder stops all effects and learns from the registry that it expired.
func TestSegmentsStopAtStaleOwner(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	clock := newFakeClock()
	c := s.mustWorker(t, "worker-a")
	h, err := c.Hold(ctx, "batch/stale", client.WithTTL(200*time.Millisecond), client.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	tra := h.Transport(client.WithHeader(identity.DefaultHeader, "worker-a"))
	build := func(owner string) client.SegmentFunc {
		return func(ctx context.Context, seq uint64) (*http.Request, error) {
			return s.put(ctx, batchPath+"stale", owner+"-"+fencegate.FormatSegment(seq)), nil
		}
	}
	if rep, err := tra.RunSegments(ctx, 1, build("a")); err != nil || !rep.Complete() {
		t.Fatalf("worker-a segment 1: %v", err)
	}
	// worker-b waits for the lease (worker-a's clock is frozen, so it does
	// not renew), then writes its own segment 1 under a higher fence.
	cb := s.mustWorker(t, "worker-b")
	hb, err := cb.Hold(ctx, "batch/stale", client.WithTTL(5*time.Second), client.WithWait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer hb.Release(ctx)
	trb := hb.Transport(client.WithHeader(identity.DefaultHeader, "worker-b"))
	if rep, err := trb.RunSegments(ctx, 1, build("b")); err != nil || !rep.Complete() {
		t.Fatalf("worker-b segment 1: %v", err)
	}

	if err := h.Usable(); err != nil {
		t.Fatalf("worker-a's frozen clock should still say HELD: %v", err)
	}
	rep, err := tra.RunSegments(ctx, 3, build("a"))
	var rej *client.RejectionError
	if !errors.Is(err, client.ErrStaleOwner) || !errors.As(err, &rej) {
		t.Fatalf("worker-a's later segments: %v, want STALE_OWNER", err)
	}
	if rej.StatusCode != http.StatusConflict || rej.Problem.Code != fencegate.CodeStaleOwner || rej.Seq != 2 {
		t.Fatalf("rejection %+v", rej)
	}
	if len(rep.Accepted) != 0 || rep.Failed == nil || rep.Failed.Seq != 2 || !rep.Failed.Sent {
		t.Fatalf("report %+v failed %+v", rep, rep.Failed)
	}
	if got := s.backend.bodies(); len(got) != 2 || got[0] != "a-1" || got[1] != "b-1" {
		t.Fatalf("backend got %q", got)
	}
	if err := h.Usable(); !errors.Is(err, client.ErrNotHolding) {
		t.Fatalf("after STALE_OWNER the holder is still usable: %v", err)
	}
	waitState(t, h, 5*time.Second, client.StateExpired)
}

// TestSegmentsInOrder: segments computed concurrently (out of order) are
// submitted strictly in order under one root; a second run continues.
func TestSegmentsInOrder(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	c := s.mustWorker(t, "worker-a")
	h, err := c.Hold(ctx, "batch/order", client.WithTTL(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	tr := h.Transport(client.WithHeader(identity.DefaultHeader, "worker-a"))
	var mu sync.Mutex
	var built []uint64
	build := func(ctx context.Context, seq uint64) (*http.Request, error) {
		// Later segments finish computing first.
		select {
		case <-time.After(time.Duration(6-seq%6) * 3 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		mu.Lock()
		built = append(built, seq)
		mu.Unlock()
		return s.put(ctx, batchPath+"order", "part-"+fencegate.FormatSegment(seq)), nil
	}
	rep, err := tr.RunSegments(ctx, 5, build, client.WithParallelism(5))
	if err != nil || !rep.Complete() {
		t.Fatalf("RunSegments: %v", err)
	}
	rep2, err := tr.RunSegments(ctx, 2, build)
	if err != nil || rep2.First != 6 || !rep2.Complete() {
		t.Fatalf("second run: first %d: %v", rep2.First, err)
	}
	writes := s.backend.all()
	if len(writes) != 7 {
		t.Fatalf("backend got %d writes", len(writes))
	}
	receipts := map[string]bool{}
	for i, w := range writes {
		want := fencegate.FormatSegment(uint64(i + 1))
		if w.Segment != want || w.Body != "part-"+want || w.OperationID != fencegate.OperationID(h.OperationRoot(), uint64(i+1)) {
			t.Fatalf("write %d: %+v", i, w)
		}
	}
	for _, r := range append(rep.Accepted, rep2.Accepted...) {
		if r.Receipt == "" || receipts[r.Receipt] || r.StatusCode != 200 || !strings.HasPrefix(string(r.Body), "stored") {
			t.Fatalf("result %+v", r)
		}
		receipts[r.Receipt] = true
	}
	if h.LastSegment() != 7 {
		t.Fatalf("last segment %d", h.LastSegment())
	}
}

// TestLostSidecarAnswerRecovered: the sidecar accepts a segment and its
// answer is lost. The Transport reports the outcome unknown with the
// operation ID; the receipt API shows it accepted, and an ordered run
// reuses it and goes on.
func TestLostSidecarAnswerRecovered(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	c := s.mustWorker(t, "worker-a")
	h, err := c.Hold(ctx, "batch/recover", client.WithTTL(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	tr := h.Transport(client.WithHeader(identity.DefaultHeader, "worker-a"))

	s.sidecarFP.SetModeN(faultproxy.DropResponse, 1)
	_, err = verdict(tr.RoundTrip(s.put(ctx, batchPath+"recover", "part-1")))
	var ue *client.OutcomeUnknownError
	if !errors.Is(err, client.ErrOutcomeUnknown) || !errors.As(err, &ue) {
		t.Fatalf("lost answer: %v, want an OutcomeUnknownError", err)
	}
	if ue.OperationID != fencegate.OperationID(h.OperationRoot(), 1) {
		t.Fatalf("operation ID %q", ue.OperationID)
	}
	rc, err := tr.Recover(ctx, err)
	if err != nil || rc.OperationID != ue.OperationID || rc.Fence != h.Fence() || rc.BackendStatus != 200 {
		t.Fatalf("recover: %+v, %v", rc, err)
	}
	sc, err := client.NewSidecar(s.sidecar, client.WithIdentityHeader(identity.DefaultHeader, "worker-a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Recover(ctx, "batch/recover", fencegate.OperationID(h.OperationRoot(), 9)); !errors.Is(err, client.ErrNoReceipt) {
		t.Fatalf("recover of an operation never sent: %v", err)
	}

	// In an ordered run: segment 3's answer is lost, recovered, and the
	// run continues with 4.
	var once sync.Once
	rep, err := tr.RunSegments(ctx, 3, func(ctx context.Context, seq uint64) (*http.Request, error) {
		if seq == 3 {
			once.Do(func() { s.sidecarFP.SetModeN(faultproxy.DropResponse, 1) })
		}
		return s.put(ctx, batchPath+"recover", "part-"+fencegate.FormatSegment(seq)), nil
	}, client.WithFirstSegment(2), client.WithParallelism(1))
	if err != nil || !rep.Complete() {
		t.Fatalf("run: %v", err)
	}
	if !rep.Accepted[1].Recovered || rep.Accepted[0].Recovered || rep.Accepted[2].Recovered {
		t.Fatalf("accepted %+v: want segment 3 recovered", rep.Accepted)
	}
	if got := s.backend.bodies(); len(got) != 4 {
		t.Fatalf("backend got %q, want each of 4 segments once", got)
	}
}

// TestRejectionsAreTyped: a sidecar rejection comes back from the
// Transport as a response (the http.RoundTripper contract: err == nil
// whenever there is one), its body still the problem document, and
// client.ResponseError turns it into a *RejectionError matching its code's
// sentinel, with the problem, the request, segment and operation ID
// attached; a rejection that says nothing of ownership leaves the Holder
// HELD.
func TestRejectionsAreTyped(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	c := s.mustWorker(t, "worker-a")
	h, err := c.Hold(ctx, "batch/typed", client.WithTTL(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	tr := h.Transport(client.WithHeader(identity.DefaultHeader, "worker-a"))
	req := s.put(ctx, batchPath+"typed", "x")
	req.Header.Set(fencegate.HeaderSegment, "3")
	_, err = verdict(tr.RoundTrip(req))
	var rej *client.RejectionError
	if !errors.Is(err, client.ErrSegmentGap) || !errors.As(err, &rej) || errors.Is(err, client.ErrStaleOwner) {
		t.Fatalf("segment 3 first: %v, want SEGMENT_GAP", err)
	}
	if rej.StatusCode != 409 || rej.Problem.Code != "SEGMENT_GAP" || rej.Problem.Detail == "" || rej.Seq != 3 ||
		rej.Method != http.MethodPut || rej.URL != s.sidecar+batchPath+"typed" || rej.Resource != "batch/typed" ||
		rej.OperationID != fencegate.OperationID(h.OperationRoot(), 3) {
		t.Fatalf("rejection %+v %+v", rej, rej.Problem)
	}
	// Through an http.Client: a response, no error; the body readable,
	// before and after ResponseError.
	resp, err := tr.Client().Do(s.put(ctx, proofedPath+"typed", "x"))
	if err != nil {
		t.Fatalf("a refused write through http.Client: error %v, want the sidecar's response", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusConflict && resp.StatusCode/100 != 4 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	err = client.ResponseError(resp)
	if !errors.Is(err, client.ErrResourceMismatch) || !errors.As(err, &rej) || rej.Resource != "batch/typed" {
		t.Fatalf("a grant for batch/typed on proofed/typed: %v, want RESOURCE_MISMATCH", err)
	}
	if again := client.ResponseError(resp); !errors.Is(again, client.ErrResourceMismatch) {
		t.Fatalf("ResponseError a second time: %v", again)
	}
	body, _ := io.ReadAll(resp.Body)
	var p fencegate.Problem
	if json.Unmarshal(body, &p) != nil || p.Code != fencegate.CodeResourceMismatch {
		t.Fatalf("the body after ResponseError: %q, want the problem document", body)
	}
	if err := client.ResponseError(nil); !errors.Is(err, client.ErrNoResponse) {
		t.Fatalf("ResponseError(nil) = %v, want ErrNoResponse", err)
	}
	if st := h.State(); st != client.StateHeld {
		t.Fatalf("state %s after rejections unrelated to ownership", st)
	}
	if len(s.backend.all()) != 0 {
		t.Fatal("a rejected write reached the backend")
	}
}

// TestStatusProofMode: against a route in proof mode the Transport adds a
// fresh Fence-Status, reusing the last one while it is fresh enough.
func TestStatusProofMode(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	c := s.mustWorker(t, "worker-a")
	h, err := c.Hold(ctx, "proofed/p1", client.WithTTL(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	tr := h.Transport(client.WithHeader(identity.DefaultHeader, "worker-a"))
	_, err = verdict(tr.RoundTrip(s.put(ctx, proofedPath+"p1", "x")))
	if !errors.Is(err, client.ErrStatusStale) {
		t.Fatalf("no proof: %v, want STATUS_STALE", err)
	}
	trp := h.Transport(client.WithHeader(identity.DefaultHeader, "worker-a"), client.WithStatusProof(5*time.Second))
	resp, err := verdict(trp.RoundTrip(s.put(ctx, proofedPath+"p1", "x")))
	if err != nil {
		t.Fatalf("with proof: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Header.Get(fencegate.HeaderReceipt) == "" || !strings.HasPrefix(string(body), "stored") {
		t.Fatalf("with proof: %d %q", resp.StatusCode, body)
	}
	// A proof that is too old for the route is not reused: a sidecar
	// demanding 1 ms makes the Transport read a new one each time.
	regBefore := s.regFault.Stats().RequestBytes
	trFresh := h.Transport(client.WithHeader(identity.DefaultHeader, "worker-a"), client.WithStatusProof(time.Millisecond))
	req := s.put(ctx, proofedPath+"p1", "y")
	req.Header.Set(fencegate.HeaderSegment, "2")
	time.Sleep(2 * time.Millisecond)
	resp, err = verdict(trFresh.RoundTrip(req))
	if err != nil {
		t.Fatalf("fresh proof: %v", err)
	}
	resp.Body.Close()
	if s.regFault.Stats().RequestBytes <= regBefore {
		t.Fatal("a proof older than the route allows was reused: no status read")
	}
}

// TestWaitingAcquireHandoff: a blocked Hold gets the lease when the holder
// releases it, through the registry's waiting acquire.
func TestWaitingAcquireHandoff(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	a, err := s.mustWorker(t, "worker-a").Hold(ctx, "batch/handoff", client.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		h   *client.Holder
		err error
	}
	done := make(chan result, 1)
	go func() {
		h, err := s.mustWorker(t, "worker-b").Hold(ctx, "batch/handoff", client.WithTTL(10*time.Second), client.WithWait(15*time.Second))
		done <- result{h, err}
	}()
	// worker-b must be waiting, not failing.
	select {
	case r := <-done:
		t.Fatalf("worker-b's Hold returned while worker-a holds the lease: %v", r.err)
	case <-time.After(50 * time.Millisecond):
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("worker-b: %v", r.err)
	}
	defer r.h.Release(ctx)
	if r.h.Fence() != a.Fence()+1 || r.h.State() != client.StateHeld {
		t.Fatalf("worker-b: fence %d state %s; worker-a had fence %d", r.h.Fence(), r.h.State(), a.Fence())
	}
	// Without a wait a held resource fails at once.
	if _, err := s.mustWorker(t, "worker-c").Hold(ctx, "batch/handoff"); !errors.Is(err, client.ErrLeaseHeld) {
		t.Fatalf("worker-c: %v, want LEASE_HELD", err)
	}
}

// TestWaitingAcquireLongerThanItsTTL: a Hold that waits longer than its
// own TTL gets a grant whose conservative local deadline (the request's
// send time plus the TTL) has already passed; Hold confirms the lease
// before returning, so the Holder it hands out is HELD and usable, not
// OWNERSHIP_UNKNOWN until its keeper's first status read (which made a
// restarted sidecar refuse writes on its store claim).
func TestWaitingAcquireLongerThanItsTTL(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	a, err := s.mustWorker(t, "worker-a").Hold(ctx, "batch/long-wait", client.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	released := make(chan error, 1)
	go func() {
		time.Sleep(600 * time.Millisecond) // longer than worker-b's TTL
		released <- a.Release(ctx)
	}()
	b, err := s.mustWorker(t, "worker-b").Hold(ctx, "batch/long-wait", client.WithTTL(300*time.Millisecond), client.WithWait(10*time.Second))
	if rerr := <-released; rerr != nil {
		t.Fatal(rerr)
	}
	if err != nil {
		t.Fatalf("worker-b: %v", err)
	}
	defer b.Release(ctx)
	if st := b.State(); st != client.StateHeld || b.Usable() != nil {
		t.Fatalf("worker-b's Hold returned a Holder in state %s (usable: %v), want HELD", st, b.Usable())
	}
}

// TestLostAcquireRequest: the acquire never reaches the registry. The
// lookup says the request ID is unknown, so the acquire is sent again with
// the same request ID and granted once.
func TestLostAcquireRequest(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	s.regFault.SetModeN(faultproxy.Cut, 1)
	h, err := s.mustWorker(t, "worker-a").Hold(ctx, "batch/lost-request", client.WithTTL(5*time.Second), client.WithRequestID("req-cut"))
	if err != nil {
		t.Fatalf("Hold: %v", err)
	}
	defer h.Release(ctx)
	if s.regFault.Stats().CutConnections != 1 {
		t.Fatal("the acquire was not the request cut")
	}
	res, err := s.direct(t, "worker-a").Resource(ctx, "batch/lost-request")
	if err != nil || res.LastFence != 1 || h.Fence() != 1 || h.RequestID() != "req-cut" {
		t.Fatalf("registry last fence %d (%v); holder fence %d request %s", res.LastFence, err, h.Fence(), h.RequestID())
	}
}

// TestCancelledWaitingAcquire: a Hold waiting for a held resource gives up
// when its context ends; it holds nothing afterwards, and the holder keeps
// the resource.
func TestCancelledWaitingAcquire(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	a, err := s.mustWorker(t, "worker-a").Hold(ctx, "batch/cancelled", client.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release(ctx)
	wctx, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
	defer cancel()
	_, err = s.mustWorker(t, "worker-b").Hold(wctx, "batch/cancelled", client.WithWait(10*time.Second), client.WithRequestID("req-b"))
	if !errors.Is(err, client.ErrLeaseHeld) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("worker-b: %v, want LEASE_HELD or the deadline", err)
	}
	res, err := s.direct(t, "worker-a").Resource(ctx, "batch/cancelled")
	if err != nil || res.Holder == nil || res.Holder.Lease != a.LeaseID() || res.LastFence != a.Fence() {
		t.Fatalf("registry: %+v %v", res, err)
	}
	if _, err := s.direct(t, "worker-b").Lookup(ctx, "req-b"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("worker-b's request: %v, want NOT_FOUND", err)
	}
}

// TestReadsPassThrough: reads are not effects: no grant headers, no lease check.
func TestReadsPassThrough(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	h, err := s.mustWorker(t, "worker-a").Hold(ctx, "batch/reads", client.WithTTL(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var seen http.Header
	srv := httptestServer(t, func(w http.ResponseWriter, r *http.Request) { seen = r.Header.Clone() })
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv, nil)
	resp, err := verdict(h.Transport(client.WithHeader("X-Test", "1")).RoundTrip(req))
	if err != nil {
		t.Fatalf("GET after release: %v", err)
	}
	resp.Body.Close()
	if seen.Get(fencegate.HeaderGrant) != "" || seen.Get("X-Test") != "1" {
		t.Fatalf("GET headers %v", seen)
	}
}
