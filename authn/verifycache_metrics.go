package authn

import "github.com/prometheus/client_golang/prometheus"

// The verification cache's metrics, read from its counters at scrape time.
var (
	verifyCacheLookupsDesc = prometheus.NewDesc("fencegate_proxy_verify_cache_lookups_total",
		"Verification cache lookups by token kind (grant, status) and result (hit, miss). A miss verifies the token in full; failures are never cached.",
		[]string{"kind", "result"}, nil)
	verifyCacheEntriesDesc = prometheus.NewDesc("fencegate_proxy_verify_cache_entries",
		"Verified tokens held by the verification cache.", nil, nil)
	verifyCacheLimitDesc = prometheus.NewDesc("fencegate_proxy_verify_cache_limit",
		"Bound of the verification cache (trust.verifyCacheEntries); 0 when it is disabled.", nil, nil)
)

// verifyCacheCollector exports the counters of the trust's current cache.
type verifyCacheCollector struct{ t *trust }

// Describe implements prometheus.Collector.
func (c verifyCacheCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- verifyCacheLookupsDesc
	ch <- verifyCacheEntriesDesc
	ch <- verifyCacheLimitDesc
}

// Collect implements prometheus.Collector.
func (c verifyCacheCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.t.cacheStats()
	for _, m := range []struct {
		kind, result string
		n            uint64
	}{
		{"grant", "hit", s.GrantHits}, {"grant", "miss", s.GrantMisses},
		{"status", "hit", s.StatusHits}, {"status", "miss", s.StatusMisses},
	} {
		ch <- prometheus.MustNewConstMetric(verifyCacheLookupsDesc, prometheus.CounterValue, float64(m.n), m.kind, m.result)
	}
	ch <- prometheus.MustNewConstMetric(verifyCacheEntriesDesc, prometheus.GaugeValue, float64(s.Entries))
	ch <- prometheus.MustNewConstMetric(verifyCacheLimitDesc, prometheus.GaugeValue, float64(s.Limit))
}

// collector returns the Prometheus collector of the verification cache.
// Register it with the sidecar's registry (Options.Metrics).
func (t *trust) collector() prometheus.Collector { return verifyCacheCollector{t: t} }
