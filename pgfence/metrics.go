package pgfence

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate/authn"
)

// metrics are library mode's collectors: what the sidecar exports as
// fencegate_proxy_*, named fencegate_pgfence_*.
type metrics struct {
	authn authn.Metrics
	// decisions counts Apply's outcomes by code ("ACCEPTED", "REPLAYED",
	// or the refusal's).
	decisions *prometheus.CounterVec
	// applyDur is Apply's latency in the transaction, by outcome.
	applyDur *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	buckets := prometheus.ExponentialBuckets(0.00001, 2, 18)
	m := &metrics{
		authn: authn.Metrics{
			Verify: prometheus.NewHistogram(prometheus.HistogramOpts{
				Name: "fencegate_pgfence_verify_seconds", Help: "Grant verification latency.", Buckets: buckets}),
			Status: prometheus.NewHistogramVec(prometheus.HistogramOpts{
				Name: "fencegate_pgfence_status_seconds", Help: "Status establishment latency by mode (proof, registry).", Buckets: buckets}, []string{"mode"}),
			ClockBehind: prometheus.NewGauge(prometheus.GaugeOpts{
				Name: "fencegate_pgfence_clock_behind_seconds", Help: "How far this process's clock was behind the lower bound on the time the registry's proofs teach, at the last status check (0 while it is not)."}),
			TrustReloads: prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: "fencegate_pgfence_trust_reloads_total", Help: "Trust bundle reloads by result (ok, refused, error)."}, []string{"result"}),
		},
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fencegate_pgfence_decisions_total", Help: "Fenced writes by outcome: ACCEPTED, REPLAYED or the refusal's problem code."}, []string{"code"}),
		applyDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "fencegate_pgfence_apply_seconds", Help: "The fence's time inside the caller's transaction, by outcome.", Buckets: buckets}, []string{"code"}),
	}
	for _, c := range []prometheus.Collector{m.authn.Verify, m.authn.Status, m.authn.ClockBehind, m.authn.TrustReloads, m.decisions, m.applyDur} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("pgfence: metrics: %w", err)
		}
	}
	return m, nil
}
