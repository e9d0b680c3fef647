package authn

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Trust events, the values of fencegate_proxy_trust_events_total{event}.
const (
	trustEventFirstUse        = "first_use"         // the bundle pinned on a store with no pins
	trustEventFirstUseRefused = "first_use_refused" // no pins, and first use not allowed (or its check failed)
	trustEventOperator        = "operator"          // a key pinned by fencegate trust accept
	trustEventSignedBundle    = "signed_bundle"     // keys pinned by a signed bundle
	trustEventSignedRefused   = "signed_bundle_refused"
	trustEventUnpin           = "unpin"  // pins removed at a reload
	trustEventInUse           = "in_use" // an "in use until" written
	trustEventInUseFailed     = "in_use_failed"
)

var trustEvents = []string{trustEventFirstUse, trustEventFirstUseRefused, trustEventOperator, trustEventSignedBundle,
	trustEventSignedRefused, trustEventUnpin, trustEventInUse, trustEventInUseFailed}

// trustMetrics are the trust pins' metrics; every label combination
// exists at 0 from the start.
type trustMetrics struct {
	keys   *prometheus.GaugeVec
	events *prometheus.CounterVec
}

func newTrustMetrics(reg prometheus.Registerer) (*trustMetrics, error) {
	m := &trustMetrics{
		keys: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "fencegate_proxy_trust_keys",
			Help: "Keys of the trust bundle file by state: pinned (grants they sign verify) or unpinned (not pinned in the fenced store, or their kid pinned as another key: grants they sign are GRANT_INVALID until fencegate trust accept or a signed bundle pins them).",
		}, []string{"state"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fencegate_proxy_trust_events_total",
			Help: "Changes to the trust pins by event: first_use, first_use_refused, operator, signed_bundle, signed_bundle_refused, unpin, in_use (an in-use time written), in_use_failed.",
		}, []string{"event"}),
	}
	for _, c := range []prometheus.Collector{m.keys, m.events} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("authn: metrics: %w", err)
		}
	}
	for _, s := range []string{"pinned", "unpinned"} {
		m.keys.WithLabelValues(s)
	}
	for _, e := range trustEvents {
		m.events.WithLabelValues(e)
	}
	return m, nil
}

func (m *trustMetrics) event(e string) { m.events.WithLabelValues(e).Inc() }
