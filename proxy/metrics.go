package proxy

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/authn"
	"github.com/fencegate/fencegate/internal/buildinfo"
)

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
	notQuiet     prometheus.Gauge
	oldest       prometheus.Gauge
	paused       prometheus.Gauge
	unknownTime  prometheus.Histogram

	compacted        *prometheus.CounterVec
	storeResources   prometheus.Gauge
	storeReceipts    prometheus.Gauge
	storeQuarantined prometheus.Gauge
	storeBytes       prometheus.Gauge

	forcedDowngrade *prometheus.GaugeVec
	clockBehind     prometheus.Gauge
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
		notQuiet: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "fencegate_proxy_unknown_not_quiet",
			Help: "Unknown mutations whose effect query answered 404 before their quiet time (backend.maxApplyDelay after the forward's deadline) at the last reconcile pass: the backend may still apply them, so they stay unknown and settle at the first pass after it.",
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
			Help: "Entries deleted from the fenced store by the background retention pass, by kind (receipt, quarantine); receipts a Commit deletes over retention.maxPerResource are not counted (fencegate_proxy_store_receipts shows the store size).",
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
		forcedDowngrade: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "fencegate_proxy_forced_downgrade",
			Help: "1 for each route running below enforce although the enforcement ledger had its shape enforced, because an operator forced it (--force-downgrade); the route label is the route, or the shape of a route no longer configured whose paths now pass unchecked. 0 for every other configured route.",
		}, []string{"route"}),
		clockBehind: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "fencegate_proxy_clock_behind_seconds",
			Help: "How far this sidecar's clock was behind the lower bound on the time that the registry's proofs teach (a proof's iat minus trust.clockSkew, plus the time since), at the last status check: more than trust.clockSkew behind the registry. 0 while it is not. Proof expiry and age are judged at the bound, so nothing is accepted late, but fresh proofs are refused as issued in the future (STATUS_STALE) until the clock is fixed.",
		}),
	}
	for _, c := range []prometheus.Collector{m.mutations, m.backendMuts, m.wouldReject, m.verifyDur, m.statusDur, m.storeDur, m.backendDur,
		m.inFlight, m.trustReloads, m.reconciled, m.unknown, m.notQuiet, m.oldest, m.paused, m.unknownTime,
		m.compacted, m.storeResources, m.storeReceipts, m.storeQuarantined, m.storeBytes, m.forcedDowngrade, m.clockBehind,
		buildinfo.Collector("proxy")} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// authn is the part of the metrics authentication updates.
func (m *metrics) authn() authn.Metrics {
	return authn.Metrics{Verify: m.verifyDur, Status: m.statusDur, ClockBehind: m.clockBehind, TrustReloads: m.trustReloads}
}

// RouteRejectionCodes are the codes a protected route's mutation can be
// refused with (docs/design.md, 5.1, but the read path's own
// METHOD_OVERRIDE_REFUSED and UPGRADE_REFUSED, and REPLAY_INCOMPLETE, which
// is an accepted segment's replay, counted as replayed). Each exists at
// zero from start for every configured route.
var RouteRejectionCodes = []fencegate.Code{
	fencegate.CodeGrantRequired, fencegate.CodeGrantInvalid, fencegate.CodeIdentityRequired,
	fencegate.CodeResourceMismatch, fencegate.CodeOwnerMismatch, fencegate.CodeEpochRevoked,
	fencegate.CodePolicyMismatch, fencegate.CodeGrantNotHeld, fencegate.CodeStatusStale,
	fencegate.CodeStaleOwner, fencegate.CodeSegmentGap, fencegate.CodeSegmentConflict,
	fencegate.CodeFenceRegression, fencegate.CodeMutationUnknown, fencegate.CodeResourceBusy,
	fencegate.CodeResourcePaused, fencegate.CodeRegistryUnavailable, fencegate.CodeStoreUnavailable,
	fencegate.CodeBackendUnavailable, fencegate.CodeFenceHeaderInvalid, fencegate.CodeInvalidResource,
	fencegate.CodeBodyTooLarge, fencegate.CodeBodyUnreadable, fencegate.CodeDigestMismatch,
	fencegate.CodeRouteNotProtected,
}

// readPathCodes are the read path's refusals (route "read-path").
var readPathCodes = []fencegate.Code{fencegate.CodeMethodOverrideRefused, fencegate.CodeUpgradeRefused}

// initLabels creates at zero every series of the decision counters whose
// label space the configuration fixes, so that increase() and rate()
// alerts see each from the first scrape: per route, every decision its
// mode can count (enforce: forwarded, replayed, rejected with each code;
// shadow: forwarded, passed with each code or REPLAY, and
// shadow_would_reject with each code; off: passed), the unmatched
// mutations' decisions, the look-alike refusals of unmatched mutations
// and off routes, and the read path's refusals; also the trust
// reload results, the reconciliation outcomes and the status and backend
// latency histograms per mode and route.
// fencegate_proxy_backend_mutations_total is created whole by newCoverage.
func (m *metrics) initLabels(cfg Config) {
	for _, r := range cfg.Routes {
		key, mode := r.Method+" "+r.Path, string(r.Mode)
		switch r.Mode {
		case ModeOff:
			m.mutations.WithLabelValues(key, mode, "passed", "")
			continue
		case ModeShadow:
			m.mutations.WithLabelValues(key, mode, "passed", "REPLAY")
		default:
			m.mutations.WithLabelValues(key, mode, "replayed", "")
		}
		m.mutations.WithLabelValues(key, mode, "forwarded", "")
		for _, c := range RouteRejectionCodes {
			if r.Mode == ModeShadow {
				m.mutations.WithLabelValues(key, mode, "passed", string(c))
				m.wouldReject.WithLabelValues(key, string(c))
			} else {
				m.mutations.WithLabelValues(key, mode, "rejected", string(c))
			}
		}
	}
	for _, r := range cfg.Routes {
		m.backendDur.WithLabelValues(r.Method + " " + r.Path)
	}
	for _, mode := range []StatusMode{StatusProof, StatusRegistry} {
		m.statusDur.WithLabelValues(string(mode))
	}
	for _, r := range []string{"ok", "refused", "error"} {
		m.trustReloads.WithLabelValues(r)
	}
	for _, how := range []string{"effect_query", "operator", "idempotent_retry"} {
		for _, outcome := range []string{"applied", "not_applied"} {
			m.reconciled.WithLabelValues(how, outcome)
		}
	}
	m.mutations.WithLabelValues("unmatched", "reject", "rejected", string(fencegate.CodeRouteNotProtected))
	if cfg.UnmatchedMutations == "pass" {
		m.mutations.WithLabelValues("unmatched", "pass", "passed", "")
		// A look-alike of an enforced shape no route is configured for, or a
		// path without a lenient reading (lenient.go).
		m.mutations.WithLabelValues("unmatched", "pass", "rejected", string(fencegate.CodeRouteNotProtected))
	}
	for _, r := range cfg.Routes {
		if r.Mode == ModeOff { // as above, on an off route
			m.mutations.WithLabelValues(r.Method+" "+r.Path, string(r.Mode), "rejected", string(fencegate.CodeRouteNotProtected))
		}
	}
	for _, c := range readPathCodes {
		m.mutations.WithLabelValues("read-path", "reject", "rejected", string(c))
	}
}
