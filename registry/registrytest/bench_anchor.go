package registrytest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/clock/clocktest"
	"github.com/fencegate/fencegate/registry"
)

// BenchAnchorBatch measures one anchor request of size BEGIN items on as
// many resources, in the steady state of a busy store: each item moves its
// resource one segment on (its Prior has the segment the previous batch
// began committed, its Next begins the next one), so every item is
// ANCHORED and written. One op is one request: one backend transaction.
// It reports items/s and the per-request latency percentiles.
func BenchAnchorBatch(b *testing.B, be registry.Backend, size int) {
	b.Helper()
	k := NewKeys(b)
	reg, err := registry.New(registry.Options{Backend: be, Signer: k.Signer, Clock: clocktest.New(time.UnixMilli(1_800_000_000_000)), Metrics: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := reg.RegisterStore(ctx, anchorCaller, anchorStore, anchorGen); err != nil {
		b.Fatal(err)
	}
	pay := "sha256:" + fmt.Sprintf("%064x", size)
	at := func(seq uint64, pending bool) fencegate.Progress {
		p := fencegate.Progress{Fence: 7, Root: "sha256:" + fmt.Sprintf("%064x", 7), Lineage: "0123456789abcdef0123456789abcdef",
			Lease: "lease-bench", GrantDigest: "sha256:" + fmt.Sprintf("%064x", 9), IssuerEpoch: 1, BackendRevision: 3, LastSeq: seq}
		if pending {
			p.Pending = &fencegate.PendingOp{Seq: seq + 1, PayloadDigest: pay, Owner: "spiffe://bench/worker"}
		}
		return p
	}
	req := fencegate.AnchorRequest{Generation: anchorGen, Items: make([]fencegate.AnchorItem, size)}
	lat := make([]time.Duration, 0, b.N)
	clk := clock.Real() // a benchmark measures real time
	b.ReportAllocs()
	b.ResetTimer()
	start := clk.Now()
	for i := 0; i < b.N; i++ {
		seq := uint64(i)
		for j := range req.Items {
			req.Items[j] = fencegate.AnchorItem{Resource: fmt.Sprintf("bench/r%04d", j), Op: fencegate.AnchorBegin, Prior: at(seq, false), Next: at(seq, true)}
		}
		t0 := clk.Now()
		resp, err := reg.Anchor(ctx, anchorCaller, anchorStore, req)
		lat = append(lat, clock.Since(clk, t0))
		if err != nil {
			b.Fatalf("anchor: %v", err)
		}
		if resp.Results[size-1].Outcome != fencegate.AnchorAnchored {
			b.Fatalf("batch %d: %+v", i, resp.Results[size-1])
		}
	}
	elapsed := clock.Since(clk, start)
	b.StopTimer()
	b.ReportMetric(float64(b.N*size)/elapsed.Seconds(), "items/s")
	reportLatencies(b, lat)
}

func reportLatencies(b *testing.B, l []time.Duration) {
	if len(l) == 0 {
		return
	}
	s := append([]time.Duration(nil), l...)
	slices.Sort(s)
	at := func(p float64) float64 { return float64(s[int(p*float64(len(s)-1))].Nanoseconds()) / 1e3 }
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}
