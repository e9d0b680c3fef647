package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/bolt"
	"github.com/fencegate/fencegate/store/memory"
)

// Server is a sidecar assembled from a Config: store, registry client,
// Proxy, inbound and admin listeners.
type Server struct {
	Proxy   *Proxy
	Store   store.Store
	in      *http.Server
	admin   *http.Server
	inLn    net.Listener
	adminLn net.Listener
	log     *zap.Logger
	// shutdownTimeout bounds the drain of in-flight requests in Serve.
	shutdownTimeout time.Duration
}

// DefaultShutdownTimeout bounds how long Serve drains in-flight requests.
const DefaultShutdownTimeout = 30 * time.Second

// NewServer opens what cfg names and binds both listeners. Call Serve.
func NewServer(cfg Config, log *zap.Logger, forceDowngrade []string) (*Server, error) {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid configuration:\n%w", err)
	}
	s := &Server{log: log, shutdownTimeout: DefaultShutdownTimeout}
	maxBody := 0
	for _, r := range cfg.Routes {
		maxBody = max(maxBody, r.ResponseStoreLimit)
	}
	switch cfg.Store.Backend {
	case "memory":
		log.Warn("memory store: accepted fences do not survive a restart; for tests only")
		s.Store = memory.New(memory.Options{MaxResponseBody: maxBody})
	default:
		if err := os.MkdirAll(filepath.Dir(cfg.Store.Path), 0o700); err != nil {
			return nil, err
		}
		st, err := bolt.Open(cfg.Store.Path, bolt.Options{MaxResponseBody: maxBody})
		if err != nil {
			return nil, err
		}
		s.Store = st
	}
	var reg *client.Client
	var ready []ReadyCheck
	if cfg.Registry.URL != "" {
		var opts []client.Option
		if cfg.Registry.CertFile != "" || cfg.Registry.CAFile != "" || strings.HasPrefix(cfg.Registry.URL, "https://") {
			opts = append(opts, client.WithTLSFiles(cfg.Registry.CertFile, cfg.Registry.KeyFile, cfg.Registry.CAFile))
		}
		var err error
		if reg, err = client.New(cfg.Registry.URL, opts...); err != nil {
			s.Store.Close()
			return nil, err
		}
		ready = append(ready, func(ctx context.Context) error { return reg.Ready(ctx) })
	}
	promReg := prometheus.NewRegistry()
	promReg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	adminToken := ""
	if cfg.Admin.TokenFile != "" {
		raw, err := os.ReadFile(cfg.Admin.TokenFile)
		if err != nil {
			s.Store.Close()
			return nil, fmt.Errorf("proxy: admin token: %w", err)
		}
		adminToken = strings.TrimSpace(string(raw))
	}
	opts := Options{Config: cfg, Store: s.Store, Logger: log, Metrics: promReg, Gatherer: promReg,
		ForceDowngrade: forceDowngrade, AdminToken: adminToken}
	if reg != nil {
		opts.Status = reg
	}
	p, err := New(opts)
	if err != nil {
		s.Store.Close()
		return nil, err
	}
	s.Proxy = p
	s.in = &http.Server{
		Handler:           p,
		ReadHeaderTimeout: cfg.Server.ReadHeaderTimeout,
		ReadTimeout:       cfg.Server.ReadTimeout,
		WriteTimeout:      cfg.Server.WriteTimeout,
		IdleTimeout:       cfg.Server.IdleTimeout,
		MaxHeaderBytes:    cfg.Server.MaxHeaderBytes,
		ErrorLog:          zap.NewStdLog(log.Named("http")),
	}
	if cfg.TLS.Enabled() {
		if s.in.TLSConfig, err = cfg.TLS.Config(); err != nil {
			s.Store.Close()
			return nil, err
		}
	}
	s.admin = &http.Server{Handler: p.AdminHandler(ready...), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
	if s.inLn, err = net.Listen("tcp", cfg.Listen); err != nil {
		s.Store.Close()
		return nil, fmt.Errorf("proxy: listen: %w", err)
	}
	if s.adminLn, err = net.Listen("tcp", cfg.Admin.Listen); err != nil {
		s.inLn.Close()
		s.Store.Close()
		return nil, fmt.Errorf("proxy: admin listen: %w", err)
	}
	return s, nil
}

// Addr and AdminAddr are the bound listen addresses.
func (s *Server) Addr() string      { return s.inLn.Addr().String() }
func (s *Server) AdminAddr() string { return s.adminLn.Addr().String() }

// Serve runs both listeners and the background loops until ctx ends, then
// drains in-flight requests (so their mutations settle) and closes the store.
// It returns the first failure: a listener's, else a drain that did not
// finish within the shutdown timeout (the store then closes under the
// requests still in flight; their mutations may be left unknown), else
// closing the store's. Every failure is logged.
func (s *Server) Serve(ctx context.Context) error {
	s.Proxy.Start()
	errc := make(chan error, 2)
	go func() {
		if s.in.TLSConfig != nil {
			errc <- s.in.ServeTLS(s.inLn, "", "")
		} else {
			errc <- s.in.Serve(s.inLn)
		}
	}()
	go func() { errc <- s.admin.Serve(s.adminLn) }()
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	if err != nil {
		s.log.Error("a listener failed; shutting down", zap.Error(err))
		err = fmt.Errorf("proxy: serve: %w", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), s.shutdownTimeout)
	defer cancel()
	for _, srv := range []struct {
		name string
		srv  *http.Server
	}{{"inbound", s.in}, {"admin", s.admin}} {
		if serr := srv.srv.Shutdown(sctx); serr != nil {
			s.log.Error("shutdown of the "+srv.name+" listener did not finish: requests still in flight (the store closes under them; their mutations may be left unknown until reconciled)",
				zap.Duration("timeout", s.shutdownTimeout), zap.Error(serr))
			if err == nil {
				err = fmt.Errorf("proxy: shutdown of the %s listener: %w", srv.name, serr)
			}
		}
	}
	s.Proxy.Close()
	if cerr := s.Store.Close(); cerr != nil {
		s.log.Error("closing the store failed", zap.Error(cerr))
		if err == nil {
			err = fmt.Errorf("proxy: close store: %w", cerr)
		}
	}
	return err
}
