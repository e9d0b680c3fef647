package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"go.uber.org/zap"

	proxyserver "github.com/fencegate/fencegate/proxy/server"
)

func init() {
	register(command{name: "proxy", summary: "run the sidecar in front of a legacy HTTP service", run: runProxy})
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ", ") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func runProxy(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("proxy", "--config proxy.yaml [--force-downgrade 'METHOD /path']...")
	configPath := fs.String("config", "proxy.yaml", "YAML configuration file")
	var force stringList
	fs.Var(&force, "force-downgrade", "allow this enforced route ('PUT /v1/x/{id}') to leave enforce mode; logged; repeatable")
	logLevel := fs.String("log-level", "", "log level (overrides the file)")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	cfg, err := proxyserver.Load(*configPath)
	if err != nil {
		return err
	}
	if *logLevel != "" {
		cfg.Log.Level = *logLevel
	}
	if err := cfg.Validate(); err != nil {
		return &exitError{2, fmt.Errorf("invalid configuration %s:\n%w", *configPath, err)}
	}
	log, err := newLogger(cfg.Log.Level)
	if err != nil {
		return err
	}
	defer log.Sync() //nolint:errcheck
	srv, err := proxyserver.New(cfg, log, force)
	if err != nil {
		return err
	}
	log.Info("sidecar listening", zap.String("addr", srv.Addr()), zap.String("admin", srv.AdminAddr()), zap.String("health", srv.HealthAddr()),
		zap.String("backend", cfg.Backend.URL), zap.Int("routes", len(cfg.Routes)))
	fmt.Fprintf(out, "fencegate proxy listening on %s (admin %s) (health %s) -> %s\n", srv.Addr(), srv.AdminAddr(), srv.HealthAddr(), cfg.Backend.URL)
	return srv.Run(ctx)
}
