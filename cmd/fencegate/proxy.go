package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/fencegate/fencegate/internal/buildinfo"
	proxyserver "github.com/fencegate/fencegate/proxy/server"
)

// proxyOpts are the flags of "fencegate proxy".
type proxyOpts struct {
	config, logLevel, logFormat string
	force                       []string
	check                       bool
}

func newProxyCmd(a *app) *cobra.Command {
	var o proxyOpts
	c := &cobra.Command{
		Use:   "proxy --config proxy.yaml [--force-downgrade 'METHOD /path']... [--check]",
		Short: "run the sidecar in front of a legacy HTTP service",
		Long: `Run the sidecar in front of a legacy HTTP service.

With --check, load and validate the file, print every problem at once (an
unknown key does not hide the others) and exit: 0 when it is valid, 2 when
not; nothing is started and nothing is read but the file. Logs are JSON on
stderr (--log-format console for a terminal); the start line names the
listeners, and a shutdown line ends the log.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runProxy(cmd, a, &o) },
	}
	f := c.Flags()
	f.StringVar(&o.config, "config", "proxy.yaml", "YAML configuration file")
	f.StringArrayVar(&o.force, "force-downgrade", nil, "allow this enforced route ('PUT /v1/x/{id}') to leave enforce mode; logged; repeatable")
	f.StringVar(&o.logLevel, "log-level", "", "log level (overrides log.level)")
	f.StringVar(&o.logFormat, "log-format", logJSON, "log format on stderr: json or console")
	f.BoolVar(&o.check, "check", false, "validate the configuration, print every problem, and exit (0 valid, 2 invalid) without starting")
	return c
}

func runProxy(cmd *cobra.Command, a *app, o *proxyOpts) error {
	cfg, err := proxyserver.Check(o.config)
	if cmd.Flags().Changed("log-level") {
		cfg.Log.Level = o.logLevel
		if err == nil {
			err = cfg.Validate()
		}
	}
	if err != nil {
		return withExit(exitUsage, fmt.Errorf("invalid configuration %s:\n%w", o.config, err), "")
	}
	if o.check {
		return printCheck(cmd, a, "proxy", o.config)
	}
	log, life, err := newLoggers(cfg.Log.Level, o.logFormat)
	if err != nil {
		return withExit(exitUsage, err, "")
	}
	defer log.Sync() //nolint:errcheck
	srv, err := proxyserver.New(cfg, log, o.force)
	if err != nil {
		return err
	}
	life.Info(fmt.Sprintf("fencegate proxy listening on %s (admin %s) (health %s) -> %s", srv.Addr(), srv.AdminAddr(), srv.HealthAddr(), cfg.Backend.URL),
		zap.String("version", buildinfo.Read().Version), zap.String("addr", srv.Addr()), zap.String("admin", srv.AdminAddr()),
		zap.String("health", srv.HealthAddr()), zap.String("backend", cfg.Backend.URL), zap.Int("routes", len(cfg.Routes)),
		zap.String("registry", cfg.Registry.URL), zap.Any("modes", routeModes(cfg)), zap.String("store", cfg.Store.Backend))
	err = srv.Run(cmd.Context())
	life.Info("fencegate proxy stopped", zap.NamedError("reason", stopReason(cmd, err)))
	return err
}

// routeModes counts the routes of each rollout mode (the start line's
// "modes": {"shadow": 2, "enforce": 1}).
func routeModes(cfg proxyserver.Config) map[string]int {
	m := map[string]int{}
	for _, r := range cfg.Routes {
		m[string(r.Mode)]++
	}
	return m
}
