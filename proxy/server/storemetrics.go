package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate/store"
)

// retryCounter is a store backend that counts the transactions it ran
// again: store/postgres, after a serialization failure or a deadlock.
type retryCounter interface {
	Retried() int64
}

// registerStoreMetrics exports what the opened store backend (before its
// anchor and claim wrap it) counts itself: its transactions run again, as
// fencegate_proxy_store_retries_total{backend}, read at each scrape. A
// backend that counts none (bolt, redis, memory) exports nothing.
func registerStoreMetrics(reg prometheus.Registerer, backend string, st store.Store) {
	rc, ok := st.(retryCounter)
	if !ok {
		return
	}
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name:        "fencegate_proxy_store_retries_total",
		Help:        "Transactions of the fenced store run again after the database aborted them (postgres: a serialization failure or a deadlock); a steady rise is contention between replicas on the same resources, and a write whose retries run out fails with STORE_UNAVAILABLE.",
		ConstLabels: prometheus.Labels{"backend": backend},
	}, func() float64 { return float64(rc.Retried()) }))
}
