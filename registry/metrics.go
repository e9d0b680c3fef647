package registry

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/internal/buildinfo"
)

type metrics struct {
	grants      *prometheus.CounterVec
	renewals    *prometheus.CounterVec
	expiries    prometheus.Counter
	releases    prometheus.Counter
	revocations *prometheus.CounterVec
	busy        prometheus.Counter
	handoff     prometheus.Histogram
	acquireWait prometheus.Histogram
	waiting     prometheus.GaugeFunc
	compacted   prometheus.Counter
	// clockBehind is how far this process's clock was behind the
	// registry's time beyond the skew budget at its last step
	// (registry_clock.go).
	clockBehind prometheus.Gauge

	// The store anchor (registry_anchor.go).
	anchorSteps      *prometheus.CounterVec
	anchorBatch      prometheus.Histogram
	registrations    *prometheus.CounterVec
	acknowledgements prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, waiting func() float64) (*metrics, error) {
	m := &metrics{
		grants: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fencegate_registry_grants_issued_total",
			Help: "Grants issued; replayed=true when an idempotent acquire returned an existing grant.",
		}, []string{"replayed"}),
		renewals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fencegate_registry_renewals_total",
			Help: "Lease renewals by result (ok, not_held).",
		}, []string{"result"}),
		expiries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fencegate_registry_expiries_total",
			Help: "Leases observed expired and closed by the registry.",
		}),
		releases: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fencegate_registry_releases_total",
			Help: "Leases released by their owner.",
		}),
		revocations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fencegate_registry_revocations_total",
			Help: "Revocations: issuer epoch bumps (reason=epoch), policy changes (reason=policy), revoked leases closed at acquire (reason=lease).",
		}, []string{"reason"}),
		busy: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "fencegate_registry_acquire_busy_total",
			Help: "Acquires answered LEASE_HELD.",
		}),
		handoff: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "fencegate_registry_handoff_wait_seconds",
			Help:    "Lock handoff: from the moment a resource became free (release or expiry) to the grant of a waiting acquirer.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		acquireWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "fencegate_registry_acquire_wait_seconds",
			Help:    "Time waiting acquires spent waiting before a grant.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 18),
		}),
	}
	m.compacted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "fencegate_registry_compacted_leases_total",
		Help: "Ended leases deleted after the retention period.",
	})
	m.clockBehind = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "fencegate_registry_clock_behind_seconds",
		Help: "How far this registry process's clock was behind the registry's time (the latest time any process committed a lease decision at) beyond maxClockSkew, at its last step; 0 while it is not. Above 0 the process decides at its clock plus maxClockSkew, and the lease states it answers can be behind the other processes' by this much.",
	})
	m.waiting = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "fencegate_registry_waiting_acquires",
		Help: "Acquires waiting for a lease right now.",
	}, waiting)
	m.anchorSteps = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fencegate_registry_anchor_steps_total",
		Help: "Anchor steps of fenced stores by op (BEGIN, SETTLE, PAUSE, RESUME, SEED) and outcome (ANCHORED, LOSS: the store lost data, CONFLICT).",
	}, []string{"op", "outcome"})
	m.anchorBatch = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "fencegate_registry_anchor_batch_items",
		Help:    "Items per anchor request (one backend transaction each).",
		Buckets: prometheus.ExponentialBuckets(1, 2, 10), // 1 .. 512
	})
	m.registrations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fencegate_registry_store_registrations_total",
		Help: "Fenced store registrations by result: created (first, anchored), matched, lost (another generation: STORE_LOST).",
	}, []string{"result"})
	m.acknowledgements = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "fencegate_registry_store_loss_acknowledgements_total",
		Help: "Fenced store losses acknowledged by an operator (a new generation adopted).",
	})
	for _, op := range []fencegate.AnchorOp{fencegate.AnchorBegin, fencegate.AnchorSettle, fencegate.AnchorPause, fencegate.AnchorResume, fencegate.AnchorSeed} {
		for _, o := range []fencegate.AnchorOutcome{fencegate.AnchorAnchored, fencegate.AnchorLoss, fencegate.AnchorConflict} {
			m.anchorSteps.WithLabelValues(string(op), string(o))
		}
	}
	for _, v := range []string{"created", "matched", "lost"} {
		m.registrations.WithLabelValues(v)
	}
	// Every label value at zero from start, for increase() alerts.
	for _, v := range []string{"true", "false"} {
		m.grants.WithLabelValues(v)
	}
	for _, v := range []string{"ok", "not_held"} {
		m.renewals.WithLabelValues(v)
	}
	for _, v := range []string{"epoch", "policy", "lease"} {
		m.revocations.WithLabelValues(v)
	}
	for _, c := range []prometheus.Collector{m.grants, m.renewals, m.expiries, m.releases, m.revocations, m.busy, m.handoff, m.acquireWait, m.waiting, m.compacted, m.clockBehind,
		m.anchorSteps, m.anchorBatch, m.registrations, m.acknowledgements,
		buildinfo.Collector("registry")} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
