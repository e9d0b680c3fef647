package server_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/internal/redisconf"
	"github.com/fencegate/fencegate/internal/redistest"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/server"
)

// redisConfig is a valid configuration on the redis backend at addr.
func redisConfig(t *testing.T, addr string) server.Config {
	c := server.Default()
	c.Listen = "127.0.0.1:0"
	c.DataDir = t.TempDir()
	c.Identity.Mode = "insecure-header"
	c.Backend = "redis"
	c.Redis = server.RedisConfig{Config: redisconf.Config{Addr: addr, Prefix: "srvtest"}}
	return c
}

func TestRedisBackendNeedsAddr(t *testing.T) {
	c := redisConfig(t, "")
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "redis.addr: required") {
		t.Fatalf("redis backend without addr accepted: %v", err)
	}
	c.Redis.Addr = "no-port"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "redis.addr") {
		t.Fatalf("redis addr without a port accepted: %v", err)
	}
	c = redisConfig(t, "127.0.0.1:6380")
	c.Redis.Prefix = "a{b}"
	c.Redis.DB = -1
	err := c.Validate()
	for _, want := range []string{"redis.prefix", "redis.db"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate does not mention %q: %v", want, err)
		}
	}
}

// TestRedisConfigLoads checks the YAML keys of the redis section.
func TestRedisConfigLoads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.yaml")
	os.WriteFile(path, []byte("backend: redis\nredis: {addr: 127.0.0.1:6390, password: pw, db: 3, prefix: p1}\n"), 0o600)
	c, err := server.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := server.RedisConfig{Config: redisconf.Config{Addr: "127.0.0.1:6390", Password: "pw", DB: 3, Prefix: "p1"}}
	if c.Backend != "redis" || c.Redis != want {
		t.Fatalf("loaded %q %+v, want redis %+v", c.Backend, c.Redis, want)
	}
}

// TestRedisBackendAssembly starts the server on a private redis-server,
// grants a lease, and reads its fence back through a second server on the
// same redis (a restarted registry process).
func TestRedisBackendAssembly(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	c := redisConfig(t, srv.Addr())
	s1, err := server.New(c, nil)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	res, err := s1.Registry.Acquire(ctx, registry.AcquireRequest{Resource: "srv/r", Owner: "o", RequestID: "q1", TTL: time.Minute})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	cancel()
	_ = s1.Run(runCtx) // closes the listener and the backend

	s2, err := server.New(c, nil)
	if err != nil {
		t.Fatalf("second server.New: %v", err)
	}
	defer func() {
		runCtx, cancel := context.WithCancel(ctx)
		cancel()
		_ = s2.Run(runCtx)
	}()
	v, err := s2.Registry.Resource(ctx, "srv/r")
	if err != nil {
		t.Fatalf("resource: %v", err)
	}
	if v.Record.LastFence != res.View.Lease.Fence || v.Record.Holder != res.View.Lease.Lease {
		t.Fatalf("second server reads LastFence %d holder %q, want %d %q", v.Record.LastFence, v.Record.Holder, res.View.Lease.Fence, res.View.Lease.Lease)
	}
}

// TestRedisBackendUnreachable checks that the server refuses to start on a
// redis address nothing answers at.
func TestRedisBackendUnreachable(t *testing.T) {
	srv := redistest.Start(t)
	srv.Kill()
	if s, err := server.New(redisConfig(t, srv.Addr()), nil); err == nil {
		runCtx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = s.Run(runCtx)
		t.Fatal("server.New succeeded with no redis to talk to")
	}
}

// TestRedisPasswordFileAndStateFile: the password comes from a file (a
// mounted Secret), exclusive with an inline one; a wrong one refuses to
// start. The process keeps its watermark in dataDir/redis-state.json.
func TestRedisPasswordFileAndStateFile(t *testing.T) {
	srv := redistest.Start(t, "--requirepass", "s3cret")
	ctx := context.Background()
	c := redisConfig(t, srv.Addr())
	pw := filepath.Join(t.TempDir(), "password")
	os.WriteFile(pw, []byte("s3cret\n"), 0o600)
	c.Redis.PasswordFile = pw
	c.Redis.Password = "inline"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "passwordFile") {
		t.Fatalf("password and passwordFile together accepted: %v", err)
	}
	c.Redis.Password = ""
	s, err := server.New(c, nil)
	if err != nil {
		t.Fatalf("server.New with the password file: %v", err)
	}
	if _, err := s.Registry.Acquire(ctx, registry.AcquireRequest{Resource: "srv/r", Owner: "o", RequestID: "q1", TTL: time.Minute}); err != nil {
		t.Fatalf("acquire: %v", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	cancel()
	_ = s.Run(runCtx)
	if b, err := os.ReadFile(filepath.Join(c.DataDir, "redis-state.json")); err != nil || !strings.Contains(string(b), `"fenceCeiling"`) {
		t.Errorf("state file after a stop: %q %v", b, err)
	}

	os.WriteFile(pw, []byte("wrong\n"), 0o600)
	if _, err := server.New(c, nil); err == nil {
		t.Fatal("server started with a wrong redis password")
	}
}

// TestRedisNonDurableRefusedUnlessAllowed: the registry does not start on
// a Redis that keeps nothing on disk (as CONFIG GET reports it), saying
// which setting and which key allows it; redis.allowNonDurable in the
// configuration reaches the backend and starts it.
func TestRedisNonDurableRefusedUnlessAllowed(t *testing.T) {
	srv := redistest.Start(t, "--appendonly", "no")
	c := redisConfig(t, srv.Addr())
	if s, err := server.New(c, nil); err == nil {
		runCtx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = s.Run(runCtx)
		t.Fatal("server.New started on appendonly no")
	} else if !strings.Contains(err.Error(), "appendonly no") || !strings.Contains(err.Error(), "allowNonDurable") {
		t.Fatalf("refusal %q does not name the setting and the key that allows it", err)
	}
	c.Redis.AllowNonDurable = true
	s, err := server.New(c, nil)
	if err != nil {
		t.Fatalf("server.New with redis.allowNonDurable: %v", err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = s.Run(runCtx)
}
