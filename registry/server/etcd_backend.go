package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"

	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/etcd"
	"github.com/fencegate/fencegate/tlsfiles"
)

// openEtcd opens the etcd backend of cfg.Etcd, its state file in dataDir
// unless cfg.StateFile names one; an unreachable cluster fails it (within
// 10s).
func openEtcd(cfg EtcdConfig, dataDir string, log *zap.Logger) (registry.Backend, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	password, err := cfg.readPassword()
	if err != nil {
		return nil, err
	}
	state := cfg.StateFile
	if state == "" {
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
		state = filepath.Join(dataDir, "etcd-state.json")
	}
	// No server name by default: each endpoint's host is verified.
	tc, err := cfg.TLS.Reloading("", tlsfiles.Reload{OnError: func(err error) {
		log.Warn("etcd.tls: rotated files not loaded; using the previous ones", zap.Error(err))
	}})
	if err != nil {
		return nil, fmt.Errorf("server: etcd.tls: %w", err)
	}
	be, err := etcd.OpenBackend(ctx, cfg.options(tc, password, state, log))
	if err != nil {
		return nil, fmt.Errorf("server: etcd: %w", err)
	}
	return be, nil
}

// options are the etcd backend's Options for cfg, with its TLS
// configuration, password and state file resolved.
func (cfg EtcdConfig) options(tc *tls.Config, password, state string, log *zap.Logger) etcd.Options {
	return etcd.Options{Endpoints: cfg.Endpoints, DialTimeout: cfg.DialTimeout, TLS: tc,
		Username: cfg.Username, Password: password, Prefix: cfg.Prefix, StateFile: state,
		RetryFor: cfg.RetryFor, AttemptTimeout: cfg.AttemptTimeout,
		Logger: slog.New(zapslog.NewHandler(log.Core()))}
}
