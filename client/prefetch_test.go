package client_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/internal/faultproxy"
)

// proofedWriter holds proofed/<id> on a manual clock and sends segments
// through a proof-mode Transport whose route accepts proofs up to maxAge.
type proofedWriter struct {
	t   *testing.T
	s   *stack
	clk *fakeClock
	h   *client.Holder
	tr  *client.Transport
	id  string
	seg int
}

func newProofedWriter(t *testing.T, id string, maxAge time.Duration) *proofedWriter {
	t.Helper()
	s := newStack(t)
	clk := newFakeClock()
	h, err := s.mustWorker(t, "worker-a").Hold(context.Background(), "proofed/"+id, client.WithTTL(30*time.Second), client.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Release(context.Background()) })
	tr := h.Transport(client.WithHeader(identity.DefaultHeader, "worker-a"), client.WithStatusProof(maxAge))
	return &proofedWriter{t: t, s: s, clk: clk, h: h, tr: tr, id: id}
}

// send writes the next segment; it must be accepted.
func (w *proofedWriter) send() {
	w.t.Helper()
	w.seg++
	req := w.s.put(context.Background(), proofedPath+w.id, "x")
	req.Header.Set(fencegate.HeaderSegment, fencegate.FormatSegment(uint64(w.seg)))
	resp, err := verdict(w.tr.RoundTrip(req))
	if err != nil {
		w.t.Fatalf("segment %d: %v", w.seg, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		w.t.Fatalf("segment %d: %d", w.seg, resp.StatusCode)
	}
}

// waitProof waits (5 s of real time at most) until the holder's proof is
// no longer old.
func (w *proofedWriter) waitProof(old string) string {
	w.t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if p := w.h.Lease().Status; p != old {
			return p
		}
	}
	w.t.Fatal("no new proof was fetched in the background")
	return ""
}

// TestProofFetchedAhead: once the proof a Transport carries is past half
// of its usable window (here maxAge 2 s, of which a fifth is kept in
// reserve: 1.6 s), a request still goes out with it at once, and the next
// proof is fetched in the background; a request made after the first
// proof's window then carries the prefetched one without waiting for the
// registry.
func TestProofFetchedAhead(t *testing.T) {
	w := newProofedWriter(t, "ahead", 2*time.Second)
	w.send()
	first := w.h.Lease().Status
	w.clk.Advance(900 * time.Millisecond) // past half of 1.6 s
	w.send()
	w.waitProof(first)
	w.clk.Advance(750 * time.Millisecond) // the first proof is 1.65 s old: unusable; the second 0.75 s: fresh
	before := w.s.regFault.Stats().RequestBytes
	w.send()
	if after := w.s.regFault.Stats().RequestBytes; after != before {
		t.Fatalf("a request waited for the registry (%d bytes sent to it) while a prefetched proof was usable", after-before)
	}
}

// TestProofPrefetchFailureChangesNothing: a background fetch that cannot
// reach the registry leaves the holder HELD and its proof usable; the
// request that later needs a new proof asks for it itself.
func TestProofPrefetchFailureChangesNothing(t *testing.T) {
	w := newProofedWriter(t, "prefail", 2*time.Second)
	w.send()
	first := w.h.Lease().Status
	w.s.regFault.SetMode(faultproxy.Refuse)
	w.clk.Advance(900 * time.Millisecond)
	w.send() // answered with the first proof; the background fetch fails
	time.Sleep(100 * time.Millisecond)
	if st := w.h.State(); st != client.StateHeld || w.h.Lease().Status != first {
		t.Fatalf("after a failed background fetch: state %s, proof changed %t", st, w.h.Lease().Status != first)
	}
	w.s.regFault.SetMode(faultproxy.Pass)
	w.clk.Advance(800 * time.Millisecond) // the first proof is now unusable
	w.send()                              // fetches synchronously
	if w.h.Lease().Status == first {
		t.Fatal("the request after the first proof's window went out without a new proof")
	}
}
