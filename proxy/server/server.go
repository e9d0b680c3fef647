package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/authn"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/clock"
	fgidentity "github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/proxy"
	"github.com/fencegate/fencegate/proxy/adminapi"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/anchor"
	"github.com/fencegate/fencegate/store/claim"
	"github.com/fencegate/fencegate/tlsfiles"
)

// Server is a sidecar assembled from a Config (the file), with its listeners
// bound. Call Run once.
type Server struct {
	proxy    *proxy.Proxy
	store    store.Store
	anchor   *anchor.Store // the store's outside anchor, when configured
	claim    *claim.Claim  // a local store's claim on its service, when claimed
	in       *http.Server
	admin    *http.Server
	health   *http.Server
	inLn     net.Listener
	adminLn  net.Listener
	healthLn net.Listener
	log      *zap.Logger
	// shutdownTimeout bounds the drain of in-flight requests in Run.
	shutdownTimeout time.Duration
}

// anchorRecheckInterval is how often a lost store rechecks at the registry
// (a variable for tests).
var anchorRecheckInterval = anchor.DefaultRecheckInterval

// DefaultShutdownTimeout bounds how long Run drains in-flight requests.
const DefaultShutdownTimeout = 30 * time.Second

// New opens what cfg names (the store, the registry client, the admin
// token, TLS files) and binds both listeners. forceDowngrade names the
// routes ("PUT /v1/x/{id}") allowed to leave enforce mode although the
// ledger says they were enforced. On an error, whatever New had opened is
// closed again.
func New(cfg Config, log *zap.Logger, forceDowngrade []string) (*Server, error) {
	return build(cfg, log, forceDowngrade, openStore)
}

// build is New with the store opener as a parameter (tests wrap the store).
func build(cfg Config, log *zap.Logger, forceDowngrade []string,
	open func(Config, *zap.Logger) (store.Store, error)) (_ *Server, err error) {
	if log == nil {
		log = zap.NewNop()
	}
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid configuration:\n%w", err)
	}
	s := &Server{log: log, shutdownTimeout: DefaultShutdownTimeout}
	// One cleanup for every error below: close the store, then release a
	// claim taken (as Run does); listen closes its own listeners.
	defer func() {
		if err != nil {
			s.cleanup()
		}
	}()
	// The lower bound on the time the registry teaches: by its proofs and
	// by the store anchor's answers (at start, and for every forwarded
	// write), so a sidecar whose clock lags the registry's by more than
	// trust.clockSkew judges proof windows on time from its start.
	timeBound := authn.NewTimeBound(clock.Real(), cfg.Trust.ClockSkew)
	st, err := open(cfg, log)
	if err != nil {
		return nil, err // st may be a typed nil: not closed
	}
	s.store = st
	promReg := prometheus.NewRegistry()
	promReg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	registerStoreMetrics(promReg, cfg.Store.Backend, st)
	ready, err := s.guardStore(cfg, log, promReg, timeBound)
	if err != nil {
		return nil, err
	}
	opts, err := s.pipelineOptions(cfg, log, promReg, timeBound, forceDowngrade)
	if err != nil {
		return nil, err
	}
	adminToken, err := readAdminToken(cfg.Admin.TokenFile)
	if err != nil {
		return nil, err
	}
	if s.proxy, err = proxy.New(opts); err != nil {
		return nil, err
	}
	aopts := adminapi.Options{Proxy: s.proxy, Token: adminToken, Gatherer: promReg, Ready: ready, Logger: log, RegistryURL: cfg.Registry.URL}
	if s.anchor != nil {
		aopts.Store = s.anchor
	}
	adminHandler, err := adminapi.New(aopts)
	if err != nil {
		return nil, err
	}
	healthHandler, err := adminapi.NewHealth(adminapi.Options{Proxy: s.proxy, Gatherer: promReg, Ready: ready, Logger: log})
	if err != nil {
		return nil, err
	}
	if err := s.httpServers(cfg, log, adminHandler, healthHandler); err != nil {
		return nil, err
	}
	if err := s.listen(cfg); err != nil {
		return nil, err
	}
	return s, nil
}

// pipelineOptions are proxy.New's dependencies: the pipeline's section of
// the file, the guarded store, the status source (counted) and the
// metrics, with first use of trust waiting on an anchored store's loss.
func (s *Server) pipelineOptions(cfg Config, log *zap.Logger, promReg *prometheus.Registry, timeBound *authn.TimeBound, forceDowngrade []string) (proxy.Options, error) {
	opts := proxy.Options{Config: cfg.Pipeline(), LegacyLedgerDir: cfg.DataDir, Store: s.store, Clock: clock.Real(), Logger: log, ForceDowngrade: forceDowngrade, TimeBound: timeBound}
	if an := s.anchor; an != nil {
		// Trust on first use pins the bundle file as it is, into a store
		// with no pins. A store that lost its data lost its pins too:
		// pinning from it would trust whatever the file holds now, so
		// first use waits until the loss is acknowledged at the registry
		// (or an operator pins keys with fencegate trust accept).
		opts.FirstUseAllowed = func(context.Context) (bool, error) { return an.Lost() == nil, nil }
	}
	if cfg.Registry.URL != "" {
		reg, err := registryClient(cfg, "", log)
		if err != nil {
			return proxy.Options{}, err
		}
		// Not a readiness check either (see the claim above): a
		// registry-mode write fails closed with REGISTRY_UNAVAILABLE.
		opts.Status = reg
	}
	if opts.Status != nil {
		var err error
		if opts.Status, err = authn.CountedStatus(opts.Status, promReg); err != nil {
			return proxy.Options{}, fmt.Errorf("proxy: metrics: %w", err)
		}
	}
	if claimHeld := s.claim; claimHeld != nil {
		promReg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "fencegate_proxy_store_claim_held",
			Help: "1 while this sidecar holds the registry claim on store.service that lets its local store accept writes; 0 while it does not (every write is refused with STORE_UNAVAILABLE).",
		}, func() float64 {
			if claimHeld.Held() != nil {
				return 0
			}
			return 1
		}))
	}
	opts.Metrics = promReg
	return opts, nil
}

// readAdminToken reads the admin API's bearer token ("" without a file).
func readAdminToken(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("proxy: admin token: %w", err)
	}
	return strings.TrimSpace(string(raw)), nil
}

// httpServers builds the three servers: the fenced listener (mTLS when
// configured), the admin API and the health listener.
func (s *Server) httpServers(cfg Config, log *zap.Logger, adminHandler, healthHandler http.Handler) error {
	s.in = &http.Server{
		Handler:           s.proxy,
		ReadHeaderTimeout: cfg.Server.ReadHeaderTimeout,
		ReadTimeout:       cfg.Server.ReadTimeout,
		WriteTimeout:      cfg.Server.WriteTimeout,
		IdleTimeout:       cfg.Server.IdleTimeout,
		MaxHeaderBytes:    cfg.Server.MaxHeaderBytes,
		ErrorLog:          zap.NewStdLog(log.Named("http")),
	}
	if cfg.TLS.Enabled() {
		var err error
		if s.in.TLSConfig, err = cfg.TLS.Reloading(tls.RequireAndVerifyClientCert, tlsfiles.Reload{OnError: func(err error) {
			log.Warn("tls: rotated files not loaded; serving with the previous ones", zap.Error(err))
		}}); err != nil {
			return err
		}
	}
	s.admin = &http.Server{Handler: adminHandler, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
	s.health = &http.Server{Handler: healthHandler, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second,
		MaxHeaderBytes: 16 << 10, ErrorLog: zap.NewStdLog(log.Named("http-health"))}
	return nil
}

// listen opens the three listeners; on an error it closes those it
// opened, newest first.
func (s *Server) listen(cfg Config) (err error) {
	var opened []io.Closer
	defer func() {
		if err != nil {
			for i := len(opened) - 1; i >= 0; i-- {
				_ = opened[i].Close()
			}
		}
	}()
	if s.inLn, err = net.Listen("tcp", cfg.Listen); err != nil {
		return fmt.Errorf("proxy: listen: %w", err)
	}
	opened = append(opened, s.inLn)
	if s.adminLn, err = net.Listen("tcp", cfg.Admin.Listen); err != nil {
		return fmt.Errorf("proxy: admin listen: %w", err)
	}
	opened = append(opened, s.adminLn)
	if s.healthLn, err = net.Listen("tcp", cfg.Health.Listen); err != nil {
		return fmt.Errorf("proxy: health listen: %w", err)
	}
	return nil
}

// guardStore wraps the store opened in s.store: in its outside anchor at
// the registry (when anchored) and, for a local store, in its claim on
// store.service (claimed here, its loop run by Run), then opens the
// anchor. It returns the readiness checks the anchor adds.
func (s *Server) guardStore(cfg Config, log *zap.Logger, promReg *prometheus.Registry, timeBound *authn.TimeBound) ([]adminapi.ReadyCheck, error) {
	if !cfg.Store.Claimed() && !cfg.Anchored() {
		return nil, nil
	}
	// The store's registry client: its claim and its anchor.
	storeReg, err := registryClient(cfg, cfg.Store.Identity, log)
	if err != nil {
		return nil, err
	}
	if cfg.Anchored() {
		// The store's progress, generation and ledger anchored outside it,
		// at the registry, so a store that lost data is caught by every
		// sidecar (a new pod included).
		upgrade, err := legacyUpgrade(cfg, log)
		if err != nil {
			return nil, err
		}
		if s.anchor, err = anchor.Wrap(s.store, anchor.FromClient(storeReg), anchor.Options{
			Store: cfg.Store.Service, Logger: log.Named("anchor"), Metrics: promReg, Clock: clock.Real(),
			CallTimeout: cfg.Registry.Timeout, RepairWindow: cfg.RepairWindow(), Upgrade: upgrade, RecheckInterval: anchorRecheckInterval,
			OnRegistryTime: timeBound.ObserveRegistryTime,
		}); err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
		s.store = s.anchor
	}
	if cfg.Store.Claimed() {
		// A local store serves one replica: claim the service at the
		// registry, or refuse to start. Run owns the claim's loop.
		if s.claim, err = claim.Take(claim.Options{Client: storeReg, Service: cfg.Store.Service, Resource: cfg.Store.ClaimResource(),
			TTL: cfg.Store.ClaimTTL, Backend: cfg.Store.Backend, Logger: log}); err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
		s.store = claim.Guard(s.store, s.claim)
		// The claim is not a readiness check: it lives in the registry,
		// and a registry outage must not take every pod out of its
		// Service. Without it the store refuses writes (Begin answers
		// STORE_UNAVAILABLE, nothing forwarded) while reads pass; the
		// gauge fencegate_proxy_store_claim_held and the logs show it.
	}
	if s.anchor == nil {
		return nil, nil
	}
	// After the claim: a local store registers once its sidecar is the
	// only one. Open needs the registry (the ledger lives there too): a
	// sidecar that cannot reach it does not start.
	octx, cancel := context.WithTimeout(context.Background(), anchorOpenTimeout)
	err = s.anchor.Open(octx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	// A store that lost data refuses every write until the loss is
	// acknowledged at the registry; on-call sees it here, in /readyz and
	// in fencegate_proxy_store_data_lost. The check reads no registry (a
	// registry outage must not make every pod unready).
	return []adminapi.ReadyCheck{{Code: fencegate.CodeStoreUnavailable, Check: s.anchor.CheckLoss}}, nil
}

// cleanup is build's error path: it closes the store, then releases
// a claim taken.
func (s *Server) cleanup() {
	if s.store != nil {
		_ = s.store.Close()
	}
	if s.claim != nil {
		s.claim.Release()
	}
}

// registryClient is a client of cfg.Registry (mTLS when configured),
// sending identity in the identity header when it is not empty.
func registryClient(cfg Config, identity string, log *zap.Logger) (*client.Client, error) {
	var copts []client.Option
	if cfg.Registry.CertFile != "" || cfg.Registry.CAFile != "" || strings.HasPrefix(cfg.Registry.URL, "https://") {
		files := tlsfiles.Client{CertFile: cfg.Registry.CertFile, KeyFile: cfg.Registry.KeyFile, CAFile: cfg.Registry.CAFile}
		copts = append(copts, client.WithTLS(files, tlsfiles.Reload{OnError: func(err error) {
			log.Warn("registry.tls: rotated files not loaded; using the previous ones", zap.Error(err))
		}}))
	}
	if identity != "" {
		copts = append(copts, client.WithIdentityHeader(fgidentity.DefaultHeader, identity))
	}
	reg, err := client.New(cfg.Registry.URL, copts...)
	if err != nil {
		return nil, fmt.Errorf("server: registry client: %w", err)
	}
	return reg, nil
}

// Addr, AdminAddr and HealthAddr are the bound listen addresses.
func (s *Server) Addr() string       { return s.inLn.Addr().String() }
func (s *Server) AdminAddr() string  { return s.adminLn.Addr().String() }
func (s *Server) HealthAddr() string { return s.healthLn.Addr().String() }

// Proxy is the assembled sidecar.
func (s *Server) Proxy() *proxy.Proxy { return s.proxy }
