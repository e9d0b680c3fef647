package server

import (
	"context"
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
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/clock"
	fgidentity "github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/proxy"
	"github.com/fencegate/fencegate/proxy/adminapi"
	"github.com/fencegate/fencegate/store"
)

// Server is a sidecar assembled from a proxy.Config, with both listeners
// bound. Call Run once.
type Server struct {
	proxy   *proxy.Proxy
	store   store.Store
	in      *http.Server
	admin   *http.Server
	inLn    net.Listener
	adminLn net.Listener
	log     *zap.Logger
	// shutdownTimeout bounds the drain of in-flight requests in Run.
	shutdownTimeout time.Duration
}

// DefaultShutdownTimeout bounds how long Run drains in-flight requests.
const DefaultShutdownTimeout = 30 * time.Second

// New opens what cfg names (the store, the registry client, the admin
// token, TLS files) and binds both listeners. forceDowngrade names the
// routes ("PUT /v1/x/{id}") allowed to leave enforce mode although the
// ledger says they were enforced. On an error, whatever New had opened is
// closed again.
func New(cfg proxy.Config, log *zap.Logger, forceDowngrade []string) (*Server, error) {
	return build(cfg, log, forceDowngrade, openStore)
}

// build is New with the store opener as a parameter (tests wrap the store).
func build(cfg proxy.Config, log *zap.Logger, forceDowngrade []string,
	open func(proxy.Config, *zap.Logger) (store.Store, error)) (_ *Server, err error) {
	if log == nil {
		log = zap.NewNop()
	}
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid configuration:\n%w", err)
	}
	// One cleanup for every error below: close what was opened, newest first.
	var opened []io.Closer
	defer func() {
		if err != nil {
			for i := len(opened) - 1; i >= 0; i-- {
				_ = opened[i].Close()
			}
		}
	}()
	s := &Server{log: log, shutdownTimeout: DefaultShutdownTimeout}
	if s.store, err = open(cfg, log); err != nil {
		return nil, err
	}
	opened = append(opened, s.store)

	var ready []adminapi.ReadyCheck
	if cfg.Store.Claimed() {
		// A local store serves one replica: claim the service at the
		// registry, or refuse to start.
		creg, err := registryClient(cfg, cfg.Store.ClaimIdentity)
		if err != nil {
			return nil, err
		}
		cl, err := claimService(cfg, creg, log)
		if err != nil {
			return nil, err
		}
		s.store = &claimedStore{Store: s.store, claim: cl}
		opened[len(opened)-1] = s.store
		ready = append(ready, adminapi.ReadyCheck{Code: fencegate.CodeStoreUnavailable, Check: func(context.Context) error { return cl.held() }})
	}
	opts := proxy.Options{Config: cfg, Store: s.store, Clock: clock.Real(), Logger: log, ForceDowngrade: forceDowngrade}
	if cfg.Registry.URL != "" {
		reg, err := registryClient(cfg, "")
		if err != nil {
			return nil, err
		}
		opts.Status = reg
		ready = append(ready, adminapi.ReadyCheck{Code: fencegate.CodeRegistryUnavailable, Check: reg.Ready})
	}
	promReg := prometheus.NewRegistry()
	promReg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if lc := lossChecker(s.store); lc != nil {
		// A store that lost data (Redis restarted empty or from another
		// data set) refuses every write; on-call sees it here and in /readyz.
		ready = append(ready, adminapi.ReadyCheck{Code: fencegate.CodeStoreUnavailable, Check: lc.CheckGeneration})
		promReg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "fencegate_proxy_store_data_lost",
			Help: "1 while the shared store's generation marker shows it lost data: every write is refused until an operator acknowledges.",
		}, func() float64 {
			if lc.GenerationLoss() != nil {
				return 1
			}
			return 0
		}))
	}
	opts.Metrics = promReg
	adminToken := ""
	if cfg.Admin.TokenFile != "" {
		raw, err := os.ReadFile(cfg.Admin.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("proxy: admin token: %w", err)
		}
		adminToken = strings.TrimSpace(string(raw))
	}
	if s.proxy, err = proxy.New(opts); err != nil {
		return nil, err
	}
	adminHandler, err := adminapi.New(adminapi.Options{Proxy: s.proxy, Token: adminToken, Gatherer: promReg, Ready: ready, Logger: log,
		Store: lossChecker(s.store)})
	if err != nil {
		return nil, err
	}
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
		if s.in.TLSConfig, err = cfg.TLS.Config(); err != nil {
			return nil, err
		}
	}
	s.admin = &http.Server{Handler: adminHandler, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
	if s.inLn, err = net.Listen("tcp", cfg.Listen); err != nil {
		return nil, fmt.Errorf("proxy: listen: %w", err)
	}
	opened = append(opened, s.inLn)
	if s.adminLn, err = net.Listen("tcp", cfg.Admin.Listen); err != nil {
		return nil, fmt.Errorf("proxy: admin listen: %w", err)
	}
	return s, nil
}

// registryClient is a client of cfg.Registry (mTLS when configured),
// sending identity in the identity header when it is not empty.
func registryClient(cfg proxy.Config, identity string) (*client.Client, error) {
	var copts []client.Option
	if cfg.Registry.CertFile != "" || cfg.Registry.CAFile != "" || strings.HasPrefix(cfg.Registry.URL, "https://") {
		copts = append(copts, client.WithTLSFiles(cfg.Registry.CertFile, cfg.Registry.KeyFile, cfg.Registry.CAFile))
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

// Addr and AdminAddr are the bound listen addresses.
func (s *Server) Addr() string      { return s.inLn.Addr().String() }
func (s *Server) AdminAddr() string { return s.adminLn.Addr().String() }

// Proxy is the assembled sidecar.
func (s *Server) Proxy() *proxy.Proxy { return s.proxy }

// generationLoss is a store that can tell it lost data (store/redis).
type generationLoss = adminapi.StoreLoss

// lossChecker finds the generationLoss under any wrapping, or nil.
func lossChecker(st store.Store) generationLoss {
	for st != nil {
		if lc, ok := st.(generationLoss); ok {
			return lc
		}
		u, ok := st.(interface{ Unwrap() store.Store })
		if !ok {
			return nil
		}
		st = u.Unwrap()
	}
	return nil
}
