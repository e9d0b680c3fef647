package anchor

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate"
)

// Label values of the metrics, every combination registered at 0.
var (
	callResults  = []string{"ok", "store_lost", "unregistered", "error"}
	stepOps      = []fencegate.AnchorOp{fencegate.AnchorBegin, fencegate.AnchorSettle, fencegate.AnchorPause, fencegate.AnchorResume, fencegate.AnchorSeed}
	stepOutcomes = []fencegate.AnchorOutcome{fencegate.AnchorAnchored, fencegate.AnchorLoss, fencegate.AnchorConflict}
	// lossKinds say how a loss was found: a Begin's Prior behind its
	// anchor, a SEED behind it (re-registration), a SETTLE whose anchored
	// mutation the store has no trace of, the repair pass after an
	// acknowledged loss, the periodic audit, an earlier version's
	// checkpoint, and the store's generation (the whole store).
	lossKinds = []string{"begin", "seed", "settle", "repair", "audit", "checkpoint", "generation"}
)

type metrics struct {
	calls    *prometheus.CounterVec
	steps    *prometheus.CounterVec
	failures *prometheus.CounterVec
	batch    prometheus.Histogram
	latency  prometheus.Histogram
	losses   *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, lost func() float64) (*metrics, error) {
	m := &metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fencegate_proxy_anchor_calls_total",
			Help: "Registry calls of the store anchor (one per batch of anchor steps) by result: ok, store_lost (the registry anchored another generation), unregistered (the registry does not know the store), error.",
		}, []string{"result"}),
		steps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fencegate_proxy_anchor_steps_total",
			Help: "Anchor steps answered by the registry, by op (BEGIN, SETTLE, PAUSE, RESUME, SEED) and outcome (ANCHORED, LOSS, CONFLICT).",
		}, []string{"op", "outcome"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fencegate_proxy_anchor_failures_total",
			Help: "Anchor steps the registry did not answer (an error or a refused call), by op; a BEGIN's is a write refused with STORE_UNAVAILABLE.",
		}, []string{"op"}),
		batch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "fencegate_proxy_anchor_batch_items", Help: "Anchor steps per registry call.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 10),
		}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "fencegate_proxy_anchor_call_seconds", Help: "Latency of the store anchor's registry calls.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18),
		}),
		losses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fencegate_proxy_store_losses_total",
			Help: "Data losses of the fenced store detected against its outside anchor, by how: begin, seed, settle, repair, audit, checkpoint (a resource repaired and paused STORE_LOSS, or paused), generation (the whole store: writes refused until acknowledged).",
		}, []string{"how"}),
	}
	for _, r := range callResults {
		m.calls.WithLabelValues(r)
	}
	for _, op := range stepOps {
		m.failures.WithLabelValues(string(op))
		for _, o := range stepOutcomes {
			m.steps.WithLabelValues(string(op), string(o))
		}
	}
	for _, k := range lossKinds {
		m.losses.WithLabelValues(k)
	}
	cs := []prometheus.Collector{m.calls, m.steps, m.failures, m.batch, m.latency, m.losses,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "fencegate_proxy_store_data_lost",
			Help: "1 while the fenced store is lost (its generation is not the one the registry anchored, or it changed): every write is refused until an operator acknowledges the loss at the registry.",
		}, lost)}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
