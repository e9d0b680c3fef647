package anchor_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/fencegate/fencegate/store/anchor"
	"github.com/fencegate/fencegate/store/memory"
)

// Every metric exists at 0 from the start, with every label combination;
// the data-lost gauge is 1 while the store is lost.
func TestMetricsFromStart(t *testing.T) {
	ctx := context.Background()
	promReg := prometheus.NewRegistry()
	r := newRegistry(t)
	reg := anchor.FromRegistry(r, caller)
	if _, _, err := reg.RegisterStore(ctx, storeName, "another"); err != nil {
		t.Fatal(err)
	}
	st, err := anchor.Wrap(memory.New(memory.Options{}), reg, anchor.Options{Store: storeName, Metrics: promReg})
	if err != nil {
		t.Fatal(err)
	}
	fams := gather(t, promReg)
	want := map[string]int{ // name -> series
		"fencegate_proxy_anchor_calls_total":    4,
		"fencegate_proxy_anchor_steps_total":    15,
		"fencegate_proxy_anchor_failures_total": 5,
		"fencegate_proxy_anchor_batch_items":    1,
		"fencegate_proxy_anchor_call_seconds":   1,
		"fencegate_proxy_store_losses_total":    7,
		"fencegate_proxy_store_data_lost":       1,
	}
	for name, n := range want {
		f, ok := fams[name]
		if !ok || len(f.Metric) != n {
			t.Errorf("%s: %d series, want %d", name, len(f.GetMetric()), n)
			continue
		}
		for _, m := range f.Metric {
			if v := value(m); v != 0 {
				t.Errorf("%s %v = %v at start", name, m.Label, v)
			}
		}
	}
	if err := st.Open(ctx); err != nil { // another generation is anchored
		t.Fatal(err)
	}
	if v := value(gather(t, promReg)["fencegate_proxy_store_data_lost"].Metric[0]); v != 1 {
		t.Fatalf("data lost gauge %v while lost", v)
	}
	gen, _ := st.Generation(ctx)
	if _, err := r.AcknowledgeLoss(ctx, storeName, gen); err != nil {
		t.Fatal(err)
	}
	if err := st.Recheck(ctx); err != nil {
		t.Fatal(err)
	}
	fams = gather(t, promReg)
	if v := value(fams["fencegate_proxy_store_data_lost"].Metric[0]); v != 0 {
		t.Fatalf("data lost gauge %v after the acknowledgement", v)
	}
	for _, m := range fams["fencegate_proxy_store_losses_total"].Metric {
		if m.Label[0].GetValue() == "generation" && value(m) != 1 {
			t.Fatalf("generation losses %v", value(m))
		}
	}
}

func gather(t *testing.T, g prometheus.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	fs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fs {
		out[f.GetName()] = f
	}
	return out
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return -1
}
