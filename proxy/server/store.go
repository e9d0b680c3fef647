package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"

	"github.com/fencegate/fencegate/proxy"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/bolt"
	"github.com/fencegate/fencegate/store/guard"
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
		return openGuardedRedisStore(cfg, maxBody, log)
	}
	return nil, fmt.Errorf("server: store.backend: %q is not bolt, redis or memory", cfg.Store.Backend)
}

// Local files of the redis backend in dataDir: the generation marker this
// sidecar last saw (store/redis) and its per-resource checkpoints
// (store/guard, a bbolt file). The operator acknowledges a Redis data loss
// through the admin API (POST /v1/store/acknowledge-loss, fencegate store
// acknowledge-loss), which rewrites redisGenerationFile; never delete
// storeCheckpointFile. legacyCheckpointFile is the JSON checkpoint file of
// earlier versions: imported at start, then renamed with
// guard.ImportedSuffix, so an upgraded sidecar keeps its checkpoints.
const (
	redisGenerationFile  = "redis-generation.json"
	storeCheckpointFile  = "store-checkpoint.db"
	legacyCheckpointFile = "store-checkpoint.json"
)

// openGuardedRedisStore opens the redis store with its generation check
// and wraps it in the local checkpoint guard, so that a Redis that lost
// data never makes this sidecar accept a fence below one it saw accepted.
func openGuardedRedisStore(cfg proxy.Config, maxBody int, log *zap.Logger) (store.Store, error) {
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("server: store: %w", err)
	}
	st, err := openRedisStore(cfg.Store.Redis, maxBody, filepath.Join(cfg.DataDir, redisGenerationFile), log)
	if err != nil {
		return nil, err
	}
	if loss := st.GenerationLoss(); loss != nil {
		log.Error("redis store LOST DATA: every write is refused (STORE_UNAVAILABLE) until an operator restores Redis and acknowledges; see README, Redis data loss",
			zap.Error(loss), zap.String("generationFile", filepath.Join(cfg.DataDir, redisGenerationFile)))
	}
	g, err := guard.WrapOptions(st, filepath.Join(cfg.DataDir, storeCheckpointFile),
		guard.Options{ImportJSON: filepath.Join(cfg.DataDir, legacyCheckpointFile)})
	if err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("server: store: %w", err)
	}
	return g, nil
}

// openRedisStore connects to the redis store's server, checks it answers
// and checks its generation marker against genFile.
func openRedisStore(rc proxy.RedisStoreConfig, maxBody int, genFile string, log *zap.Logger) (*storeredis.Store, error) {
	opts := storeredis.Options{
		Logger:          slog.New(zapslog.NewHandler(log.Core())),
		GenerationFile:  genFile,
		Addr:            rc.Addr,
		Username:        rc.Username,
		DB:              rc.DB,
		Prefix:          rc.Prefix,
		MaxResponseBody: maxBody,
		DialTimeout:     rc.Timeout,
		ReadTimeout:     rc.Timeout,
		WriteTimeout:    rc.Timeout,
		MinReplicas:     rc.MinReplicas,
		ReplicaTimeout:  rc.ReplicaTimeout,
	}
	if rc.PasswordFile != "" {
		b, err := os.ReadFile(rc.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("server: store.redis.passwordFile: %w", err)
		}
		opts.Password = strings.TrimRight(string(b), "\r\n")
	}
	// Re-read at handshake time when the files change (rotation); a
	// rotation that does not load keeps the last good files.
	host, _, _ := net.SplitHostPort(rc.Addr) // validated by proxy.Config
	tc, err := rc.TLS.Reloading(host, tlsfiles.Reload{OnError: func(err error) {
		log.Warn("store.redis.tls: rotated files not loaded", zap.Error(err))
	}})
	if err != nil {
		return nil, fmt.Errorf("server: store.redis.tls: %w", err)
	}
	opts.TLS = tc
	ctx, cancel := context.WithTimeout(context.Background(), redisOpenTimeout)
	defer cancel()
	st, err := storeredis.Open(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("server: store: %w", err)
	}
	return st, nil
}
