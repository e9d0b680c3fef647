package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate/proxy"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/bolt"
	"github.com/fencegate/fencegate/store/memory"
	storeredis "github.com/fencegate/fencegate/store/redis"
	"github.com/fencegate/fencegate/tlsfiles"
)

// redisOpenTimeout bounds the first PING of the redis store at start: a
// sidecar whose store does not answer does not start.
const redisOpenTimeout = 10 * time.Second

// openStore opens the fenced store cfg.Store names, sized for the largest
// response a route keeps.
func openStore(cfg proxy.Config, log *zap.Logger) (store.Store, error) {
	maxBody := 0
	for _, r := range cfg.Routes {
		maxBody = max(maxBody, r.ResponseStoreLimit)
	}
	switch cfg.Store.Backend {
	case "memory":
		log.Warn("memory store: accepted fences do not survive a restart; for tests only")
		return memory.New(memory.Options{MaxResponseBody: maxBody}), nil
	case "bolt":
		if err := os.MkdirAll(filepath.Dir(cfg.Store.Path), 0o700); err != nil {
			return nil, fmt.Errorf("server: store: %w", err)
		}
		st, err := bolt.Open(cfg.Store.Path, bolt.Options{MaxResponseBody: maxBody})
		if err != nil {
			return nil, fmt.Errorf("server: store: %w", err)
		}
		return st, nil
	case "redis":
		return openRedisStore(cfg.Store.Redis, maxBody)
	}
	return nil, fmt.Errorf("server: store.backend: %q is not bolt, redis or memory", cfg.Store.Backend)
}

// openRedisStore connects to the redis store's server and checks it
// answers.
func openRedisStore(rc proxy.RedisStoreConfig, maxBody int) (store.Store, error) {
	opts := storeredis.Options{
		Addr:            rc.Addr,
		Username:        rc.Username,
		DB:              rc.DB,
		Prefix:          rc.Prefix,
		MaxResponseBody: maxBody,
		DialTimeout:     rc.Timeout,
		ReadTimeout:     rc.Timeout,
		WriteTimeout:    rc.Timeout,
	}
	if rc.PasswordFile != "" {
		b, err := os.ReadFile(rc.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("server: store.redis.passwordFile: %w", err)
		}
		opts.Password = strings.TrimRight(string(b), "\r\n")
	}
	if rc.TLS.Enabled {
		tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: rc.TLS.ServerName}
		if tc.ServerName == "" {
			tc.ServerName, _, _ = net.SplitHostPort(rc.Addr) // validated by proxy.Config
		}
		if rc.TLS.CAFile != "" {
			pool, err := tlsfiles.Pool(rc.TLS.CAFile)
			if err != nil {
				return nil, fmt.Errorf("server: store.redis.tls.caFile: %w", err)
			}
			tc.RootCAs = pool
		}
		if rc.TLS.CertFile != "" {
			cert, err := tls.LoadX509KeyPair(rc.TLS.CertFile, rc.TLS.KeyFile)
			if err != nil {
				return nil, fmt.Errorf("server: store.redis.tls: %w", err)
			}
			tc.Certificates = []tls.Certificate{cert}
		}
		opts.TLS = tc
	}
	ctx, cancel := context.WithTimeout(context.Background(), redisOpenTimeout)
	defer cancel()
	st, err := storeredis.Open(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("server: store: %w", err)
	}
	return st, nil
}
