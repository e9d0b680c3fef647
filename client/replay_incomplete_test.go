package client_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/identity"
)

// TestReplayIncompleteIsAccepted: a segment whose backend answer was over
// the sidecar's responseStoreLimit (64 KiB by default) is accepted; sent
// again, the sidecar cannot replay its answer whole and says
// REPLAY_INCOMPLETE. The Transport turns that into a
// *ReplayIncompleteError (ErrReplayIncomplete) with the receipt ID and the
// backend's status, never a rejection or an unknown outcome, and leaves
// the Holder HELD; an ordered run counts the segment as accepted and goes
// on; nothing reaches the backend twice.
func TestReplayIncompleteIsAccepted(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	h, err := s.mustWorker(t, "worker-a").Hold(ctx, "batch/big", client.WithTTL(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	tr := h.Transport(client.WithHeader(identity.DefaultHeader, "worker-a"))
	big := strings.Repeat("z", 70<<10) // the backend answers "stored " + body: over 64 KiB
	body := func(seq uint64) string {
		if seq == 1 {
			return big
		}
		return "part-" + fencegate.FormatSegment(seq)
	}
	build := func(ctx context.Context, seq uint64) (*http.Request, error) {
		return s.put(ctx, batchPath+"big", body(seq)), nil
	}

	// Segments 1 and 2 accepted; segment 1's whole answer reaches the worker.
	rep, err := tr.RunSegments(ctx, 2, build, client.WithResponseBodyLimit(1<<20))
	if err != nil || !rep.Complete() {
		t.Fatalf("first run: %v", err)
	}
	first := rep.Accepted[0]
	if first.Replayed || first.Incomplete || string(first.Body) != "stored "+big+"\n" || first.Receipt == "" {
		t.Fatalf("segment 1 first answer: %d bytes, %+v", len(first.Body), first.Header)
	}

	// Segment 1 again, on its own: accepted, its answer not replayable.
	req := s.put(ctx, batchPath+"big", big)
	req.Header.Set(fencegate.HeaderSegment, "1")
	resp, err := verdict(tr.RoundTrip(req))
	if resp != nil {
		resp.Body.Close()
		t.Fatalf("got a response %d, want an error", resp.StatusCode)
	}
	var ri *client.ReplayIncompleteError
	var rej *client.RejectionError
	if !errors.Is(err, client.ErrReplayIncomplete) || !errors.As(err, &ri) || errors.As(err, &rej) ||
		errors.Is(err, client.ErrOutcomeUnknown) || errors.Is(err, client.ErrMutationUnknown) {
		t.Fatalf("replay of segment 1: %v (%T), want a *ReplayIncompleteError", err, err)
	}
	if ri.ReceiptID != first.Receipt || ri.BackendStatus != http.StatusOK || ri.Seq != 1 ||
		ri.OperationID != fencegate.OperationID(h.OperationRoot(), 1) || ri.StatusCode != http.StatusConflict || ri.Problem.Code != fencegate.CodeReplayIncomplete {
		t.Fatalf("replay error %+v", ri)
	}
	if !strings.Contains(err.Error(), first.Receipt) {
		t.Fatalf("the error does not name the receipt: %v", err)
	}
	if st := h.State(); st != client.StateHeld {
		t.Fatalf("state %s: an accepted segment says nothing against the lease", st)
	}
	// The receipt API confirms it from the error alone.
	rc, err := tr.Recover(ctx, err)
	if err != nil || rc.ID != first.Receipt || rc.BackendStatus != http.StatusOK {
		t.Fatalf("recover from the replay error: %+v, %v", rc, err)
	}

	// A run over segments 1..3: 1 is accepted (incomplete replay), 2 is
	// replayed whole, 3 is new.
	rep, err = tr.RunSegments(ctx, 3, build, client.WithFirstSegment(1), client.WithParallelism(1))
	if err != nil || !rep.Complete() {
		t.Fatalf("second run: %v (failed %+v)", err, rep.Failed)
	}
	a := rep.Accepted
	if !a[0].Incomplete || !a[0].Replayed || a[0].Receipt != first.Receipt || a[0].StatusCode != http.StatusOK || a[0].Body != nil {
		t.Fatalf("segment 1 in the second run: %+v", a[0])
	}
	if a[1].Incomplete || !a[1].Replayed || string(a[1].Body) != "stored part-2\n" || a[2].Replayed || a[2].Incomplete {
		t.Fatalf("segments 2, 3 in the second run: %+v / %+v", a[1], a[2])
	}
	if h.LastSegment() != 3 {
		t.Fatalf("last segment %d", h.LastSegment())
	}
	if got := s.backend.bodies(); len(got) != 3 {
		t.Fatalf("the backend got %d writes, want each of 3 segments once", len(got))
	}
}
