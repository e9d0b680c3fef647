package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/internal/listenaddr"
	"github.com/fencegate/fencegate/registry/server"
)

func init() {
	register(command{name: "registry", summary: "run the grant registry (embedded bbolt backend)", run: runRegistry})
}

func runRegistry(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("registry", "[--config FILE] [--data DIR] [--listen ADDR] [--fence-floor N] [--issuer-epoch N] [--insecure-dev]")
	configPath := fs.String("config", "", "YAML configuration file (flags below override it)")
	data := fs.String("data", "", "data directory: the bbolt file and generated keys (default fencegate-data)")
	listen := fs.String("listen", "", "listen address (default 127.0.0.1:8700; the host is $"+listenaddr.EnvHost+" when set)")
	dev := fs.Bool("insecure-dev", false, "INSECURE development mode: trust the "+identity.DefaultHeader+" header from anyone as the caller's identity, and allow admin calls from loopback")
	logLevel := fs.String("log-level", "", "log level: debug, info, warn, error")
	fenceFloor := fs.Uint64("fence-floor", 0, "raise the global fence floor to at least N before serving (never lowers it): every fence issued after exceeds N; the highest fence the sidecars accepted (fencegate fences collect), when this registry replaces, migrates or rolls back another (overrides fenceFloor)")
	issuerEpoch := fs.Uint64("issuer-epoch", 0, "raise the issuer epoch to at least N before serving (never lowers it; grants of older epochs are revoked): above the highest epoch the sidecars accept (fencegate fences collect), when this registry replaces, migrates or rolls back another (overrides minIssuerEpoch)")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	cfg := server.Default()
	if *configPath != "" {
		var err error
		if cfg, err = server.Load(*configPath); err != nil {
			return err
		}
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "data":
			cfg.DataDir = *data
		case "listen":
			cfg.Listen = *listen
		case "log-level":
			cfg.Log.Level = *logLevel
		case "fence-floor":
			cfg.FenceFloor = *fenceFloor
		case "issuer-epoch":
			cfg.MinIssuerEpoch = *issuerEpoch
		}
	})
	if *dev {
		cfg.Identity = identity.Config{Mode: identity.ModeInsecureHeader}
		cfg.Admin.AllowLoopback = true
	}
	if err := cfg.Validate(); err != nil {
		return &exitError{2, fmt.Errorf("invalid configuration:\n%w", err)}
	}
	log, err := newLogger(cfg.Log.Level)
	if err != nil {
		return err
	}
	defer log.Sync() //nolint:errcheck
	srv, err := server.New(cfg, log)
	if err != nil {
		return err
	}
	m := srv.StartMeta()
	log.Info("registry listening", zap.String("addr", srv.Addr()), zap.String("backend", cfg.Backend),
		zap.String("dataDir", cfg.DataDir), zap.String("identity", cfg.Identity.Mode),
		zap.String("lineage", m.Lineage), zap.Uint64("fenceFloor", m.FenceFloor), zap.Uint64("issuerEpoch", m.IssuerEpoch))
	fmt.Fprintf(out, "fencegate registry listening on %s (backend %s, data %s, lineage %s, fence floor %d, issuer epoch %d)\n", srv.Addr(), cfg.Backend, cfg.DataDir, m.Lineage, m.FenceFloor, m.IssuerEpoch)
	return srv.Run(ctx)
}
