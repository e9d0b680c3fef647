package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/internal/buildinfo"
	"github.com/fencegate/fencegate/internal/listenaddr"
	"github.com/fencegate/fencegate/registry/server"
)

// registryOpts are the flags of "fencegate registry".
type registryOpts struct {
	config, data, listen, logLevel, logFormat string
	dev, check                                bool
	fenceFloor, issuerEpoch                   uint64
}

func newRegistryCmd(a *app) *cobra.Command {
	var o registryOpts
	c := &cobra.Command{
		Use:   "registry [--config FILE] [--data DIR] [--listen ADDR] [--insecure-dev] [--check]",
		Short: "run the grant registry (embedded bbolt backend by default)",
		Long: `Run the grant registry. Flags override the configuration file.

With --check, load and validate the configuration (the file and the flags),
print every problem at once and exit: 0 when it is valid, 2 when not;
nothing is started. Logs are JSON on stderr (--log-format console for a
terminal); the start line names the listen address, and a shutdown line
ends the log.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runRegistry(cmd, a, &o) },
	}
	f := c.Flags()
	f.StringVar(&o.config, "config", "", "YAML configuration file (flags below override it)")
	f.StringVar(&o.data, "data", "", "data directory: the bbolt file and generated keys (default fencegate-data)")
	f.StringVar(&o.listen, "listen", "", "listen address (default 127.0.0.1:8700; the host is $"+listenaddr.EnvHost+" when set)")
	f.BoolVar(&o.dev, "insecure-dev", false, "INSECURE development mode: trust the "+identity.DefaultHeader+" header from anyone as the caller's identity, and allow admin calls from loopback")
	f.StringVar(&o.logLevel, "log-level", "", "log level: debug, info, warn, error (overrides log.level)")
	f.StringVar(&o.logFormat, "log-format", logJSON, "log format on stderr: json or console")
	f.Uint64Var(&o.fenceFloor, "fence-floor", 0, "raise the global fence floor to at least N before serving (never lowers it): every fence issued after exceeds N; the highest fence the sidecars accepted (fencegate fences collect), when this registry replaces, migrates or rolls back another (overrides fenceFloor)")
	f.Uint64Var(&o.issuerEpoch, "issuer-epoch", 0, "raise the issuer epoch to at least N before serving (never lowers it; grants of older epochs are revoked): above the highest epoch the sidecars accept (fencegate fences collect), when this registry replaces, migrates or rolls back another (overrides minIssuerEpoch)")
	f.BoolVar(&o.check, "check", false, "validate the configuration, print every problem, and exit (0 valid, 2 invalid) without starting")
	return c
}

// registryConfig is the configuration of the file and the flags, with
// every problem of both.
func registryConfig(cmd *cobra.Command, o *registryOpts) (server.Config, error) {
	cfg := server.Default()
	var loadErr error
	if o.config != "" {
		if cfg, loadErr = server.LoadAll(o.config); loadErr != nil && !errors.Is(loadErr, server.ErrConfigKey) {
			return cfg, withExit(exitUsage, loadErr, "")
		}
	}
	fl := cmd.Flags()
	if fl.Changed("data") {
		cfg.DataDir = o.data
	}
	if fl.Changed("listen") {
		cfg.Listen = o.listen
	}
	if fl.Changed("log-level") {
		cfg.Log.Level = o.logLevel
	}
	if fl.Changed("fence-floor") {
		cfg.FenceFloor = o.fenceFloor
	}
	if fl.Changed("issuer-epoch") {
		cfg.MinIssuerEpoch = o.issuerEpoch
	}
	if o.dev {
		cfg.Identity = identity.Config{Mode: identity.ModeInsecureHeader}
		cfg.Admin.AllowLoopback = true
	}
	if err := errors.Join(loadErr, cfg.Validate()); err != nil {
		return cfg, withExit(exitUsage, fmt.Errorf("invalid configuration%s:\n%w", fileName(o.config), err), "")
	}
	return cfg, nil
}

func runRegistry(cmd *cobra.Command, a *app, o *registryOpts) error {
	cfg, err := registryConfig(cmd, o)
	if err != nil {
		return err
	}
	if o.check {
		return printCheck(cmd, a, "registry", o.config)
	}
	log, life, err := newLoggers(cfg.Log.Level, o.logFormat)
	if err != nil {
		return withExit(exitUsage, err, "")
	}
	defer log.Sync() //nolint:errcheck
	srv, err := server.New(cfg, log)
	if err != nil {
		return err
	}
	m := srv.StartMeta()
	life.Info(fmt.Sprintf("fencegate registry listening on %s (backend %s, data %s, lineage %s, fence floor %d, issuer epoch %d)",
		srv.Addr(), cfg.Backend, cfg.DataDir, m.Lineage, m.FenceFloor, m.IssuerEpoch),
		zap.String("version", buildinfo.Read().Version), zap.String("addr", srv.Addr()), zap.String("backend", cfg.Backend),
		zap.String("dataDir", cfg.DataDir), zap.String("identityMode", cfg.Identity.Mode),
		zap.String("lineage", m.Lineage), zap.Uint64("fenceFloor", m.FenceFloor), zap.Uint64("issuerEpoch", m.IssuerEpoch))
	err = srv.Run(cmd.Context())
	life.Info("fencegate registry stopped", zap.NamedError("reason", stopReason(cmd, err)))
	return err
}
