package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"

	"github.com/fencegate/fencegate/internal/atomicfile"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/anchor"
	"github.com/fencegate/fencegate/store/bolt"
	"github.com/fencegate/fencegate/store/guard"
	"github.com/fencegate/fencegate/store/memory"
	storeredis "github.com/fencegate/fencegate/store/redis"
	"github.com/fencegate/fencegate/tlsfiles"
)

// redisOpenTimeout bounds the first PING of the redis store at start: a
// sidecar whose store does not answer does not start.
const redisOpenTimeout = 10 * time.Second

// anchorOpenTimeout bounds the anchor's Open at start (its registration,
// and the seed of a registry that holds no generation of the store, one
// registry call per fencegate.MaxAnchorBatch records).
const anchorOpenTimeout = 5 * time.Minute

// openStore opens the fenced store cfg.Store names, sized for the largest
// response a route keeps. The anchor (store/anchor) is wrapped around it
// by New.
func openStore(cfg Config, log *zap.Logger) (store.Store, error) {
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
		return openRedisStore(cfg.Store.Redis, maxBody, log)
	case "postgres":
		return openPostgresStore(cfg.Store.Postgres, maxBody, log)
	}
	return nil, fmt.Errorf("server: store.backend: %q is not bolt, redis, postgres or memory", cfg.Store.Backend)
}

// Files that earlier versions of the redis backend kept in dataDir: the
// Redis generation marker the sidecar last saw, and the per-resource
// checkpoints of store/guard (a bbolt file, and the JSON file of still
// earlier versions). The anchor takes them into account once at start
// (anchor.Options.Upgrade: the generation registered first, the
// checkpoints anchored or paused), then they are renamed with
// guard.UpgradedSuffix and never read again.
const redisGenerationFile = "redis-generation.json"

// legacyUpgrade reads the files above, if any.
func legacyUpgrade(cfg Config, log *zap.Logger) (anchor.Upgrade, error) {
	var u anchor.Upgrade
	if cfg.Store.Backend != "redis" {
		return u, nil
	}
	genPath := filepath.Join(cfg.DataDir, redisGenerationFile)
	cpPath := filepath.Join(cfg.DataDir, guard.FileName)
	jsonPath := filepath.Join(cfg.DataDir, guard.JSONFileName)
	b, err := os.ReadFile(genPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return u, fmt.Errorf("server: %s: %w", genPath, err)
	default:
		var f struct {
			Generation string `json:"generation"`
		}
		if err := json.Unmarshal(b, &f); err != nil || f.Generation == "" {
			return u, fmt.Errorf("server: %s is not a generation file of an earlier version (move it away only if you know the Redis it names is the one in use)", genPath)
		}
		u.Generation = f.Generation
	}
	cps, err := guard.Read(cpPath)
	if err != nil {
		return u, fmt.Errorf("server: %w", err)
	}
	old, err := guard.ReadJSON(jsonPath)
	if err != nil {
		return u, fmt.Errorf("server: %w", err)
	}
	for r, c := range old {
		if have, ok := cps[r]; ok {
			c = guard.Merge(have, c)
		}
		if cps == nil {
			cps = map[string]guard.Checkpoint{}
		}
		cps[r] = c
	}
	for r, c := range cps {
		u.Checkpoints = append(u.Checkpoints, anchor.Checkpoint{Resource: r, Fence: c.Fence, Seq: c.Seq,
			UnknownFence: c.UnknownFence, UnknownSeq: c.UnknownSeq, Paused: c.SawPause})
	}
	var present []string
	for _, p := range []string{genPath, cpPath, jsonPath} {
		if _, err := os.Stat(p); err == nil {
			present = append(present, p)
		}
	}
	if len(present) == 0 {
		return anchor.Upgrade{}, nil
	}
	log.Info("taking the Redis generation file and checkpoints of an earlier version into account",
		zap.Strings("files", present), zap.Int("checkpoints", len(u.Checkpoints)))
	u.Done = func() error {
		for _, p := range present {
			if err := os.Rename(p, p+guard.UpgradedSuffix); err != nil {
				return fmt.Errorf("server: rename %s: %w", p, err)
			}
		}
		if err := atomicfile.SyncDir(cfg.DataDir); err != nil {
			return fmt.Errorf("server: %w", err)
		}
		log.Info("the files of the earlier version are taken into account and renamed", zap.Strings("files", present), zap.String("suffix", guard.UpgradedSuffix))
		return nil
	}
	return u, nil
}

// openRedisStore connects to the redis store's server and checks it
// answers. The generation it must keep seeing is set by the anchor.
func openRedisStore(rc RedisStoreConfig, maxBody int, log *zap.Logger) (*storeredis.Store, error) {
	opts := storeredis.Options{
		Logger:          slog.New(zapslog.NewHandler(log.Core())),
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
		AllowNonDurable: rc.AllowNonDurable,
	}
	var err error
	if opts.Password, err = rc.ReadPassword("store.redis"); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	// Re-read at handshake time when the files change (rotation); a
	// rotation that does not load keeps the last good files.
	tc, err := rc.TLS.Reloading(rc.Host(), tlsfiles.Reload{OnError: func(err error) {
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
