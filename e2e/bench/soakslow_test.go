package main

import (
	"bytes"
	"math"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// slowTotals reads the observations above slowOver from the text page of
// histograms with the sidecar's own buckets, summed over label sets, and
// NaN where a histogram is missing.
func TestSlowTotals(t *testing.T) {
	reg := prometheus.NewRegistry()
	// The buckets proxy/metrics.go and store/anchor/metrics.go use.
	store := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "fencegate_proxy_store_seconds",
		Buckets: prometheus.ExponentialBuckets(0.00005, 2, 20)}, []string{"op"})
	anchor := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "fencegate_proxy_anchor_call_seconds",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18)})
	reg.MustRegister(store, anchor)
	for _, v := range []float64{0.001, 0.4, 0.41, 0.5, 3} {
		store.WithLabelValues("begin").Observe(v)
	}
	store.WithLabelValues("commit").Observe(1)
	anchor.Observe(0.2)
	anchor.Observe(0.9)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	for _, f := range fams {
		if _, err := expfmt.MetricFamilyToText(&page, f); err != nil {
			t.Fatal(err)
		}
	}
	got := slowTotals(page.String())
	if got[0] != 4 || got[1] != 1 || !math.IsNaN(got[2]) {
		t.Fatalf("slow store/anchor/backend %v, want 4 (0.41, 0.5, 3 and 1 s), 1, NaN (no backend histogram)", got)
	}
	if bad := slowTotals("not a metrics page {"); !math.IsNaN(bad[0]) {
		t.Fatalf("a page that does not parse: %v, want NaN", bad)
	}
}
