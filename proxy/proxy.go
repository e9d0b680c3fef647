package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/authn"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/proxy/outbound"
	"github.com/fencegate/fencegate/store"
)

// Options are a Proxy's dependencies and its own settings. Config (the
// pipeline's settings, validated by New) and Store are required.
type Options struct {
	Config Config
	Store  store.Store
	// LegacyLedgerDir is where an earlier version kept its enforcement
	// ledger (enforcement.json in the sidecar's dataDir): New imports it
	// into the store once, then renames it. Empty: nothing to import.
	LegacyLedgerDir string
	// Status reads grant status from the registry (routes in registry
	// status mode). Required when such routes exist.
	Status authn.StatusSource
	// Transport forwards to the backend (default: a tuned http.Transport,
	// HTTP/1.1). Every mutation reaches it in a form net/http's Transport
	// never sends twice (outbound/sendonce.go); another RoundTripper gets it without
	// GetBody and must not resend a request on its own.
	Transport http.RoundTripper
	// Clock is the sidecar's time and timers (default clock.Real()).
	Clock   clock.Clock
	Logger  *zap.Logger
	Metrics prometheus.Registerer
	// ForceDowngrade names routes ("PUT /v1/x/{id}") that may leave
	// enforce mode although the ledger says they were enforced.
	ForceDowngrade []string
	// FirstUseAllowed says whether a fenced store with no trust pins may
	// pin the trust bundle file as it is (trust on first use). It must
	// answer false when the store is not known to be its own data set (a
	// store that lost its data lost its pins with it: pinning on first
	// use then would trust whatever the file holds now); the outside
	// anchor of the store answers it. nil: allowed. An error is a refusal
	// (asked again at the next reload).
	FirstUseAllowed authn.FirstUseCheck
	// TimeBound is the lower bound on the time the sidecar learns from
	// the registry (authn/learnedtime.go): share it with whatever else talks to
	// the registry (the store anchor) so their answers teach it too. nil:
	// the sidecar makes its own, taught by the proofs it verifies. Its
	// skew must be trust.clockSkew.
	TimeBound *authn.TimeBound
}

// Proxy is the sidecar: the only acceptance point for protected writes.
type Proxy struct {
	cfg      Config
	store    store.Store
	router   *router
	looks    *lookalikes // lenient.go, built with the enforcement ledger
	upgrades upgradeRules
	auth     *authn.Authenticator
	backend  *outbound.Target
	tr       http.RoundTripper
	pass     *outbound.PassThrough
	sender   *outbound.Sender
	clk      clock.Clock
	log      *zap.Logger
	m        *metrics
	cov      *coverage
	// legacyLedgerDir holds an enforcement.json of an earlier version.
	legacyLedgerDir string

	waitMu  sync.Mutex
	waiters map[string]chan struct{} // per resource, closed when a mutation settles
}

// New builds a Proxy. It loads the trust bundle and checks the enforcement
// ledger: a route that was ever enforced cannot go back to shadow or off
// unless it is named in ForceDowngrade.
func New(o Options) (*Proxy, error) {
	cfg := o.Config
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("proxy: invalid configuration:\n%w", err)
	}
	if o.Store == nil {
		return nil, errors.New("proxy: a store is required")
	}
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Metrics == nil {
		o.Metrics = prometheus.NewRegistry()
	}
	m, err := newMetrics(o.Metrics)
	if err != nil {
		return nil, fmt.Errorf("proxy: metrics: %w", err)
	}
	m.initLabels(cfg)
	p := &Proxy{cfg: cfg, store: o.Store, clk: o.Clock, log: o.Logger, m: m, waiters: map[string]chan struct{}{}, legacyLedgerDir: o.LegacyLedgerDir}
	if p.router, err = newRouter(cfg.Routes); err != nil {
		return nil, err
	}
	if p.upgrades, err = compileUpgrades(cfg.Upgrades); err != nil {
		return nil, err
	}
	ident, err := identity.New(cfg.Identity)
	if err != nil {
		return nil, err
	}
	if settle := cfg.Backend.Timeout + cfg.Backend.MaxApplyDelay + cfg.Reconcile.Interval; settle > UnknownTarget {
		p.log.Warn("backend.timeout + backend.maxApplyDelay + reconcile.interval exceed the 15-minute UNKNOWN target: an unknown mutation that only an effect query's 404 can settle stays unknown that long (FencegateMutationUnknownTooLong fires); give such routes effectQueryCloses or idempotencyKey",
			zap.Duration("settle", settle), zap.Duration("maxApplyDelay", cfg.Backend.MaxApplyDelay))
	}
	if ident.Insecure() {
		p.log.Warn("INSECURE identity mode: the " + ident.Header() + " header is trusted from any caller; anyone can act as any owner. Use only for local development.")
	}
	var maxAge time.Duration
	for _, r := range cfg.Routes {
		maxAge = max(maxAge, r.Status.MaxAge)
	}
	tctx, tcancel := context.WithTimeout(context.Background(), 30*time.Second)
	p.auth, err = authn.New(tctx, authn.Config{Bundle: cfg.Trust.Bundle, AllowHS256: cfg.Trust.AllowHS256, ClockSkew: cfg.Trust.ClockSkew,
		MaxTokenBytes: cfg.Trust.MaxTokenBytes, MinIssuerEpoch: cfg.Trust.MinIssuerEpoch, VerifyCacheEntries: cfg.Trust.VerifyCacheEntries,
		RegistryTimeout: cfg.StatusTimeout, MaxProofAge: maxAge},
		authn.Deps{Store: o.Store, Status: o.Status, FirstUse: o.FirstUseAllowed, TimeBound: o.TimeBound, Identity: ident,
			Clock: o.Clock, Log: o.Logger, Metrics: m.authn(), Registerer: o.Metrics})
	tcancel()
	if err != nil {
		return nil, err
	}
	backendURL, _ := url.Parse(cfg.Backend.URL)
	if p.backend, err = outbound.NewTarget(backendURL, cfg.Forwarded.TrustedProxies); err != nil {
		return nil, err
	}
	p.tr = o.Transport
	if p.tr == nil {
		p.tr = newTransport(cfg.Backend)
	}
	// Every path to the backend uses p.tr: counting there is counting what
	// reached the backend (coverage.go), and no mutation leaving through it
	// is one net/http may send twice (outbound/sendonce.go).
	p.cov = newCoverage(m.backendMuts, o.Logger)
	p.tr = &coverageTransport{next: outbound.NewOnceTransport(p.tr), cov: p.cov}
	p.sender = &outbound.Sender{Target: p.backend, Transport: p.tr, MaxResponseBytes: cfg.Backend.MaxResponseBytes}
	p.pass = outbound.NewPassThrough(p.backend, p.tr, cfg.PassWriteTimeout, func(w http.ResponseWriter, r *http.Request, err error) {
		p.log.Warn("pass-through to backend failed", zap.String("method", r.Method), zap.String("path", r.URL.Path), zap.Error(err))
		p.writeProblem(w, reject(fencegate.CodeBackendUnavailable, "the backend did not answer"), 0)
	})
	lctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.checkLedger(lctx, o.ForceDowngrade); err != nil {
		return nil, err
	}
	return p, nil
}

func newTransport(c BackendConfig) *http.Transport {
	d := &net.Dialer{Timeout: c.DialTimeout, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		MaxIdleConns:          c.MaxIdleConnsPerHost * 2,
		MaxIdleConnsPerHost:   c.MaxIdleConnsPerHost,
		MaxConnsPerHost:       c.MaxConnsPerHost,
		IdleConnTimeout:       c.IdleConnTimeout,
		ResponseHeaderTimeout: c.Timeout,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
	}
}

// settled wakes the requests waiting for resource.
func (p *Proxy) settled(resource string) {
	p.waitMu.Lock()
	if ch, ok := p.waiters[resource]; ok {
		close(ch)
		delete(p.waiters, resource)
	}
	p.waitMu.Unlock()
}

// settleSignal returns a channel closed when a mutation of resource settles here.
func (p *Proxy) settleSignal(resource string) <-chan struct{} {
	p.waitMu.Lock()
	defer p.waitMu.Unlock()
	ch, ok := p.waiters[resource]
	if !ok {
		ch = make(chan struct{})
		p.waiters[resource] = ch
	}
	return ch
}

// now is the sidecar's time.
func (p *Proxy) now() time.Time { return p.clk.Now() }
