package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/keys"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/bolt"
	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/registry/memory"
	"github.com/fencegate/fencegate/registry/redis"
	"github.com/fencegate/fencegate/tlsfiles"
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
	// meta is the registry's state after its start (Registry.Init).
	meta registry.Meta
}

// StartMeta is the registry's meta as its start left it: its issuer
// lineage and the global fence floor after the start floor was applied.
func (s *Server) StartMeta() registry.Meta { return s.meta }

// New builds a registry from cfg and binds its listener. Call Run. On an
// error, whatever New had opened is closed again.
func New(cfg Config, log *zap.Logger) (_ *Server, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid configuration:\n%w", err)
	}
	if log == nil {
		log = zap.NewNop()
	}
	s := &Server{cfg: cfg, log: log}
	signer, jwks, err := s.keys()
	if err != nil {
		return nil, err
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
	if s.backend, err = openBackend(cfg, log); err != nil {
		return nil, err
	}
	opened = append(opened, s.backend)
	promReg := prometheus.NewRegistry()
	promReg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.Registry, err = registry.New(registry.Options{
		Backend:      s.backend,
		Signer:       signer,
		Issuer:       cfg.Issuer,
		Clock:        clock.Monotonic(),
		MaxClockSkew: cfg.MaxClockSkew,
		DefaultTTL:   cfg.Leases.DefaultTTL,
		MinTTL:       cfg.Leases.MinTTL,
		MaxTTL:       cfg.Leases.MaxTTL,
		MaxWait:      cfg.Leases.MaxWait,
		MaxProofTTL:  cfg.Proofs.MaxTTL,
		ProofReuse:   cfg.Proofs.Reuse,
		Logger:       log,
		Metrics:      promReg,
	})
	if err != nil {
		return nil, err
	}
	// Before serving: the data set's lineage (written once), and the
	// start floor (raised, never lowered).
	ictx, icancel := context.WithTimeout(context.Background(), 30*time.Second)
	m, err := s.Registry.Init(ictx, registry.InitOptions{FenceFloor: cfg.FenceFloor, MinIssuerEpoch: cfg.MinIssuerEpoch})
	icancel()
	if err != nil {
		return nil, fmt.Errorf("server: start: %w", err)
	}
	s.meta = m
	res, err := identity.New(cfg.Identity)
	if err != nil {
		return nil, err
	}
	if res.Insecure() {
		log.Warn("INSECURE identity mode: the " + res.Header() + " header is trusted from any caller; anyone can act as any owner. Use only for local development.")
	}
	admin := httpapi.Admin{Identities: cfg.Admin.Identities, AllowLoopback: cfg.Admin.AllowLoopback}
	if cfg.Admin.TokenFile != "" {
		tok, err := os.ReadFile(cfg.Admin.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("server: admin token: %w", err)
		}
		admin.Token = strings.TrimSpace(string(tok))
	}
	s.handler, err = httpapi.New(httpapi.Options{
		Registry: s.Registry, Identity: res, Admin: admin, JWKS: jwks,
		Logger: log, Metrics: promReg, Gatherer: promReg,
		// With a client CA the handshake asks for a certificate but lets a
		// caller without one in, for the probes, /metrics and the JWKS;
		// every other route refuses that caller (IDENTITY_REQUIRED).
		ClientCertRequired: cfg.TLS.ClientCAFile != "",
	})
	if err != nil {
		return nil, err
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
		// Rotated files are re-read; one that does not load keeps the
		// last good material and is logged here.
		if s.srv.TLSConfig, err = cfg.TLS.Reloading(tls.VerifyClientCertIfGiven, tlsfiles.Reload{OnError: func(err error) {
			log.Warn("tls: rotated files not loaded; serving with the previous ones", zap.Error(err))
		}}); err != nil {
			return nil, err
		}
	}
	if s.ln, err = net.Listen("tcp", cfg.Listen); err != nil {
		return nil, fmt.Errorf("server: listen: %w", err)
	}
	return s, nil
}

// openBackend opens the backend cfg.Backend names.
func openBackend(cfg Config, log *zap.Logger) (registry.Backend, error) {
	switch cfg.Backend {
	case "memory":
		log.Warn("memory backend: fences do not survive a restart; for tests only")
		return memory.NewBackend(), nil
	case "etcd":
		return openEtcd(cfg.Etcd, cfg.DataDir, log)
	case "redis":
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r := cfg.Redis
		password, err := r.ReadPassword("redis")
		if err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
		state := r.StateFile
		if state == "" {
			if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
				return nil, fmt.Errorf("server: %w", err)
			}
			state = filepath.Join(cfg.DataDir, "redis-state.json")
		}
		tc, err := r.TLS.Reloading(r.Host(), tlsfiles.Reload{OnError: func(err error) {
			log.Warn("redis.tls: rotated files not loaded; using the previous ones", zap.Error(err))
		}})
		if err != nil {
			return nil, fmt.Errorf("server: redis.tls: %w", err)
		}
		return redis.OpenBackend(ctx, redis.Options{Addr: r.Addr, Username: r.Username, Password: password, DB: r.DB, Prefix: r.Prefix, TLS: tc,
			DialTimeout: r.Timeout, ReadTimeout: r.Timeout, WriteTimeout: r.Timeout,
			StateFile: state, MinReplicas: r.MinReplicas, ReplicaTimeout: r.ReplicaTimeout, AllowNonDurable: r.AllowNonDurable, Logger: slog.New(zapslog.NewHandler(log.Core()))})
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	return bolt.OpenBackend(filepath.Join(cfg.DataDir, "registry.db"), 5*time.Second)
}

// Addr is the bound listen address.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Handler is the HTTP handler (for in-process tests).
func (s *Server) Handler() http.Handler { return s.handler }

// Run serves until ctx ends or the listener fails, with the registry's
// own background work (Registry.Run: the wake-ups from other processes
// sharing the backend, the backend's loops) and the lease retention loop
// (compactLoop) running beside it. Then it shuts the listener down
// gracefully (within 10s), stops the loops and waits for them, and only
// then closes the backend: nothing Run started still uses the backend
// when it closes. It returns the listener's
// failure, else the shutdown's, else closing the backend's. Call Run once.
func (s *Server) Run(ctx context.Context) error {
	loopCtx, stopLoops := context.WithCancel(context.WithoutCancel(ctx))
	defer stopLoops()
	var loops, listener sync.WaitGroup
	loops.Go(func() { _ = s.Registry.Run(loopCtx) })
	loops.Go(func() { s.compactLoop(loopCtx) })
	errc := make(chan error, 1)
	listener.Go(func() {
		if s.srv.TLSConfig != nil {
			errc <- s.srv.ServeTLS(s.ln, "", "")
		} else {
			errc <- s.srv.Serve(s.ln)
		}
	})
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
	listener.Wait()
	stopLoops()
	loops.Wait()
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
// hourly, until ctx ends.
func (s *Server) compactLoop(ctx context.Context) {
	tk := s.Registry.Clock().NewTicker(time.Hour)
	defer tk.Stop()
	for {
		if _, err := s.Registry.Compact(ctx, s.cfg.Leases.Retention); err != nil && ctx.Err() == nil {
			s.log.Error("compacting ended leases failed", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-tk.C():
		}
	}
}
