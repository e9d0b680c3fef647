package server

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

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"

	"github.com/fencegate/fencegate/internal/identity"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/bolt"
	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/registry/keys"
	"github.com/fencegate/fencegate/registry/memory"
)

// Server is a started registry.
type Server struct {
	cfg      Config
	log      *zap.Logger
	backend  registry.Backend
	Registry *registry.Registry
	handler  http.Handler
	ln       net.Listener
	srv      *http.Server
}

// New builds a registry from cfg and binds its listener. Call Serve.
func New(cfg Config, log *zap.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid configuration:\n%w", err)
	}
	s := &Server{cfg: cfg, log: log}
	signer, jwks, err := s.keys()
	if err != nil {
		return nil, err
	}
	switch cfg.Backend {
	case "memory":
		log.Warn("memory backend: fences do not survive a restart; for tests only")
		s.backend = memory.NewBackend()
	default:
		if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
		s.backend, err = bolt.OpenBackend(filepath.Join(cfg.DataDir, "registry.db"), 5*time.Second)
		if err != nil {
			return nil, err
		}
	}
	promReg := prometheus.NewRegistry()
	promReg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.Registry, err = registry.New(registry.Options{
		Backend:     s.backend,
		Signer:      signer,
		Issuer:      cfg.Issuer,
		DefaultTTL:  cfg.Leases.DefaultTTL,
		MinTTL:      cfg.Leases.MinTTL,
		MaxTTL:      cfg.Leases.MaxTTL,
		MaxWait:     cfg.Leases.MaxWait,
		MaxProofTTL: cfg.Proofs.MaxTTL,
		Logger:      log,
		Metrics:     promReg,
	})
	if err != nil {
		s.backend.Close()
		return nil, err
	}
	res, err := identity.New(cfg.Identity)
	if err != nil {
		s.backend.Close()
		return nil, err
	}
	if res.Insecure() {
		log.Warn("INSECURE identity mode: the " + res.Header() + " header is trusted from any caller; anyone can act as any owner. Use only for local development.")
	}
	admin := httpapi.Admin{Identities: cfg.Admin.Identities, AllowLoopback: cfg.Admin.AllowLoopback}
	if cfg.Admin.TokenFile != "" {
		tok, err := os.ReadFile(cfg.Admin.TokenFile)
		if err != nil {
			s.backend.Close()
			return nil, fmt.Errorf("server: admin token: %w", err)
		}
		admin.Token = strings.TrimSpace(string(tok))
	}
	s.handler, err = httpapi.New(httpapi.Options{
		Registry: s.Registry, Identity: res, Admin: admin, JWKS: jwks,
		Logger: log, Metrics: promReg, Gatherer: promReg,
	})
	if err != nil {
		s.backend.Close()
		return nil, err
	}
	s.ln, err = net.Listen("tcp", cfg.Listen)
	if err != nil {
		s.backend.Close()
		return nil, fmt.Errorf("server: listen: %w", err)
	}
	s.srv = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      cfg.Leases.MaxWait + 30*time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          zap.NewStdLog(log.Named("http")),
	}
	if cfg.TLS.Enabled() {
		tc, err := cfg.TLS.Config()
		if err != nil {
			s.ln.Close()
			s.backend.Close()
			return nil, err
		}
		s.srv.TLSConfig = tc
	}
	return s, nil
}

// Addr is the bound listen address.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Handler is the HTTP handler (for in-process tests).
func (s *Server) Handler() http.Handler { return s.handler }

// Serve serves until ctx ends, then shuts down gracefully and closes the backend.
func (s *Server) Serve(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() {
		if s.srv.TLSConfig != nil {
			errc <- s.srv.ServeTLS(s.ln, "", "")
		} else {
			errc <- s.srv.Serve(s.ln)
		}
	}()
	go s.compactLoop(ctx)
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = s.srv.Shutdown(sctx)
		cancel()
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	if cerr := s.backend.Close(); err == nil {
		err = cerr
	}
	return err
}

// keys loads (or on first start generates) the signing key and builds the
// published trust bundle.
func (s *Server) keys() (*keys.Signer, jwk.Set, error) {
	path := s.cfg.SigningKey
	if path == "" {
		path = filepath.Join(s.cfg.DataDir, "keys", "signing.jwk")
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			k, err := keys.Generate(jwa.EdDSA, nil)
			if err != nil {
				return nil, nil, err
			}
			if err := keys.Save(path, k); err != nil {
				return nil, nil, err
			}
			s.log.Info("generated a signing key", zap.String("path", path), zap.String("kid", k.KeyID()))
		}
	}
	key, err := keys.LoadSigningKey(path)
	if err != nil {
		return nil, nil, err
	}
	signer, err := keys.NewSigner(key)
	if err != nil {
		return nil, nil, err
	}
	all := []jwk.Key{key}
	for _, p := range s.cfg.PublishKeys {
		set, err := keys.LoadSet(p)
		if err != nil {
			return nil, nil, err
		}
		for i := 0; i < set.Len(); i++ {
			k, _ := set.Key(i)
			all = append(all, k)
		}
	}
	pub, err := keys.Bundle(false, all...)
	if err != nil {
		return nil, nil, err
	}
	if keys.IsSymmetric(key) {
		s.log.Warn("HS256 signing key: the trust bundle is the shared secret itself; distribute it as a secret, it is not published on /.well-known/jwks.json")
	}
	if s.cfg.DataDir != "" {
		if err := keys.Save(filepath.Join(s.cfg.DataDir, "keys", "jwks.json"), pub); err != nil {
			return nil, nil, err
		}
	}
	return signer, pub, nil
}

// compactLoop deletes ended leases past the retention period, at start and
// hourly.
func (s *Server) compactLoop(ctx context.Context) {
	tk := time.NewTicker(time.Hour)
	defer tk.Stop()
	for {
		if _, err := s.Registry.Compact(ctx, s.cfg.Leases.Retention); err != nil && ctx.Err() == nil {
			s.log.Error("compacting ended leases failed", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
	}
}
