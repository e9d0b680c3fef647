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

// TestNoReceiptIsNotNotApplied (issue 19, "not found yet" is not "never
// will be"): segment 2's connection to the sidecar is cut while the
// backend is still working on it, so the worker has no answer and the
// sidecar no receipt yet. The SDK's recovery finds no receipt and does not
// take that for "not applied": the ordered run stops at segment 2 (sent,
// outcome unknown), reports only segment 1 accepted, sends nothing after
// it and does not count segment 2 as the holder's last. The backend then
// finishes segment 2 and the sidecar commits it: recovery now finds its
// receipt. A run started again from the holder's last segment resends
// segment 2 with the same payload, which the sidecar answers from that
// receipt (a replay: the backend sees it once), and goes on with 3.
func TestNoReceiptIsNotNotApplied(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	h, err := s.mustWorker(t, "worker-a").Hold(ctx, "batch/no-receipt", client.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	// A connection per request: the cut below breaks segment 2's only,
	// never one a later request would reuse.
	fresh := func() *http.Transport { return &http.Transport{DisableKeepAlives: true} }
	tr := h.Transport(client.WithBase(fresh()), client.WithHeader(identity.DefaultHeader, "worker-a"))

	release := make(chan struct{})
	s.backend.setHold(func(w write) {
		if w.Segment != "2" {
			return
		}
		s.backend.setHold(nil)
		// The worker's connection breaks while the backend works on it.
		s.sidecarFP.CutAll() // the mode stays Pass: recovery gets through
		<-release
	})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	build := func(ctx context.Context, seq uint64) (*http.Request, error) {
		return s.put(ctx, batchPath+"no-receipt", "part-"+fencegate.FormatSegment(seq)), nil
	}
	rep, err := tr.RunSegments(ctx, 3, build, client.WithParallelism(1))
	if !errors.Is(err, client.ErrOutcomeUnknown) || rep.Failed == nil || rep.Failed.Seq != 2 || !rep.Failed.Sent {
		t.Fatalf("run: %v, failed %+v; want it stopped at segment 2, sent, outcome unknown", err, rep.Failed)
	}
	if len(rep.Accepted) != 1 || rep.Accepted[0].Seq != 1 || rep.Complete() {
		t.Fatalf("accepted %+v: want segment 1 only", rep.Accepted)
	}
	if h.LastSegment() != 1 {
		t.Fatalf("the holder's last segment is %d after a segment without a receipt, want 1", h.LastSegment())
	}
	op2 := fencegate.OperationID(h.OperationRoot(), 2)
	sc, err := client.NewSidecar(s.sidecar, client.WithIdentityHeader(identity.DefaultHeader, "worker-a"), client.WithHTTPClient(&http.Client{Transport: fresh()}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Recover(ctx, "batch/no-receipt", op2); !errors.Is(err, client.ErrNoReceipt) {
		t.Fatalf("recover while the backend still works on segment 2: %v, want ErrNoReceipt", err)
	}
	if got := s.backend.bodies(); len(got) != 2 {
		t.Fatalf("the backend got %q: nothing may be sent after a segment whose outcome is unknown", got)
	}

	// The backend finishes: segment 2 took effect after all.
	close(release)
	waitFor(t, 10*time.Second, "segment 2's receipt", func() bool {
		rc, err := sc.Recover(ctx, "batch/no-receipt", op2)
		return err == nil && rc.OperationID == op2
	})
	rep, err = tr.RunSegments(ctx, 2, build, client.WithParallelism(1))
	if err != nil || !rep.Complete() || rep.First != 2 {
		t.Fatalf("run again: %v, %+v", err, rep)
	}
	if !rep.Accepted[0].Replayed || rep.Accepted[1].Replayed {
		t.Fatalf("accepted %+v: want segment 2 replayed from its receipt, 3 forwarded", rep.Accepted)
	}
	if got := s.backend.bodies(); len(got) != 3 || got[1] != "part-2" || got[2] != "part-3" {
		t.Fatalf("the backend got %q, want part-1, part-2, part-3 once each", got)
	}
}
