package proxy

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	mutations    *prometheus.CounterVec
	backendMuts  *prometheus.CounterVec
	wouldReject  *prometheus.CounterVec
	verifyDur    prometheus.Histogram
	statusDur    *prometheus.HistogramVec
	storeDur     *prometheus.HistogramVec
	backendDur   *prometheus.HistogramVec
	inFlight     prometheus.Gauge
	trustReloads *prometheus.CounterVec
	reconciled   *prometheus.CounterVec
	unknown      prometheus.Gauge
	oldest       prometheus.Gauge
	paused       prometheus.Gauge
	unknownTime  prometheus.Histogram

	compacted        *prometheus.CounterVec
	storeResources   prometheus.Gauge
	storeReceipts    prometheus.Gauge
	storeQuarantined prometheus.Gauge
	storeBytes       prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	lat := func(name, help string, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: name, Help: help, Buckets: prometheus.ExponentialBuckets(0.00005, 2, 20),
		}, labels)
	}
	m := &metrics{
		mutations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fencegate_proxy_mutations_total",
			Help: "Protected mutations by route, mode, decision (forwarded, replayed, rejected, passed) and code.",
		}, []string{"route", "mode", "decision", "code"}),
		backendMuts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fencegate_proxy_backend_mutations_total",
			Help: "Mutations handed to the backend, by mode (enforce, shadow, off, unmatched, upgrade, unmarked) and whether grant authentication (auth) and the fence check (fence) passed (passed, skipped). In enforce mode anything but passed/passed is a bug.",
		}, []string{"mode", "auth", "fence"}),
		wouldReject: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fencegate_proxy_shadow_would_reject_total",
			Help: "Shadow-mode mutations that enforce mode would have rejected, by route and code.",
		}, []string{"route", "code"}),
		verifyDur: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "fencegate_proxy_verify_seconds", Help: "Grant verification latency.",
			Buckets: prometheus.ExponentialBuckets(0.00001, 2, 18),
		}),
		statusDur:  lat("fencegate_proxy_status_seconds", "Status establishment latency by mode (proof, registry).", "mode"),
		storeDur:   lat("fencegate_proxy_store_seconds", "Fenced store latency by operation.", "op"),
		backendDur: lat("fencegate_proxy_backend_seconds", "Backend latency of forwarded mutations by route.", "route"),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "fencegate_proxy_in_flight", Help: "Protected mutations being forwarded right now.",
		}),
		trustReloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fencegate_proxy_trust_reloads_total",
			Help: "Trust bundle reloads by result (ok, refused, error).",
		}, []string{"result"}),
		reconciled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fencegate_proxy_reconciled_total",
			Help: "Unknown mutations resolved, by how (effect_query, operator, idempotent_retry) and outcome (applied, not_applied).",
		}, []string{"how", "outcome"}),
		unknown: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "fencegate_proxy_unknown_mutations", Help: "Mutations whose outcome is unknown (awaiting reconciliation).",
		}),
		oldest: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "fencegate_proxy_oldest_unknown_age_seconds", Help: "Age of the oldest unknown mutation (target: under 900).",
		}),
		paused: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "fencegate_proxy_paused_resources", Help: "Resources paused (FENCE_REGRESSION or operator).",
		}),
		unknownTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "fencegate_proxy_unknown_resolve_seconds", Help: "Time mutations spent UNKNOWN before they were resolved.",
			Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 900, 1800, 3600},
		}),
		compacted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fencegate_proxy_store_compacted_total",
			Help: "Entries deleted from the fenced store by retention, by kind (receipt, quarantine).",
		}, []string{"kind"}),
		storeResources: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "fencegate_proxy_store_resources", Help: "Resource records in the fenced store (kept for ever).",
		}),
		storeReceipts: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "fencegate_proxy_store_receipts", Help: "Receipts in the fenced store.",
		}),
		storeQuarantined: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "fencegate_proxy_store_quarantined", Help: "Quarantine entries in the fenced store.",
		}),
		storeBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "fencegate_proxy_store_bytes", Help: "Size of the fenced store (bolt: file size; memory: estimated heap).",
		}),
	}
	for _, c := range []prometheus.Collector{m.mutations, m.backendMuts, m.wouldReject, m.verifyDur, m.statusDur, m.storeDur, m.backendDur,
		m.inFlight, m.trustReloads, m.reconciled, m.unknown, m.oldest, m.paused, m.unknownTime,
		m.compacted, m.storeResources, m.storeReceipts, m.storeQuarantined, m.storeBytes} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
