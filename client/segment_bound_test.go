package client_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
)

// TestSegmentsAboveMaxSeqAreRefusedLocally: a segment the sidecar's store
// cannot hold (above fencegate.MaxSeq) is refused by the SDK with
// ErrInvalidSegment before anything is sent, whether it comes from the
// Fence-Segment header, the context or an ordered run. Before the contract
// was unified, the SDK's parser accepted up to 2^64-1 and sent it.
func TestSegmentsAboveMaxSeqAreRefusedLocally(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	h, err := s.mustWorker(t, "worker-a").Hold(ctx, "batch/maxseq", client.WithTTL(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	var sent atomic.Int32
	srv := httptestServer(t, func(http.ResponseWriter, *http.Request) { sent.Add(1) })
	above := strconv.FormatUint(fencegate.MaxSeq+1, 10)

	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, srv, nil)
	req.Header.Set(fencegate.HeaderSegment, above)
	if _, err := verdict(h.Transport().RoundTrip(req)); !errors.Is(err, client.ErrInvalidSegment) || !errors.Is(err, fencegate.ErrInvalidSegment) {
		t.Fatalf("Fence-Segment %s: %v, want ErrInvalidSegment", above, err)
	}
	req, _ = http.NewRequestWithContext(client.ContextWithSegment(ctx, fencegate.MaxSeq+1), http.MethodPut, srv, nil)
	if _, err := verdict(h.Transport().RoundTrip(req)); !errors.Is(err, client.ErrInvalidSegment) {
		t.Fatalf("context segment %s: %v, want ErrInvalidSegment", above, err)
	}
	build := func(ctx context.Context, seq uint64) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodPut, srv, nil)
	}
	if _, err := h.Transport().RunSegments(ctx, 2, build, client.WithFirstSegment(fencegate.MaxSeq)); !errors.Is(err, client.ErrInvalidSegment) {
		t.Fatalf("run past MaxSeq: %v, want ErrInvalidSegment", err)
	}
	if n := sent.Load(); n != 0 {
		t.Fatalf("%d requests reached the server", n)
	}
	// MaxSeq itself is a segment the SDK sends.
	req, _ = http.NewRequestWithContext(ctx, http.MethodPut, srv, nil)
	req.Header.Set(fencegate.HeaderSegment, strconv.FormatUint(fencegate.MaxSeq, 10))
	resp, err := verdict(h.Transport().RoundTrip(req))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if sent.Load() != 1 {
		t.Fatalf("segment MaxSeq was not sent")
	}
}
