package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/proxy/server"
)

// The redis store backend is configured under store.redis; its address is
// required and every malformed setting is named.
func TestRedisStoreConfigValidates(t *testing.T) {
	c := validConfig(t)
	c.Registry.URL = "http://registry.internal:8700"
	c.Store = server.StoreConfig{Backend: "redis", Service: "svc-a", Redis: server.RedisStoreConfig{Addr: "redis.internal:6379", Prefix: "svc-a", Timeout: time.Second}}
	if err := c.Validate(); err != nil {
		t.Fatalf("a valid redis store config: %v", err)
	}
	if !c.Anchored() {
		t.Fatal("a redis store with store.service and registry.url is not anchored")
	}

	c.Store = server.StoreConfig{Backend: "redis"}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "store.redis.addr: required") {
		t.Fatalf("redis without addr: %v", err)
	}

	c.Store = server.StoreConfig{Backend: "redis", Redis: server.RedisStoreConfig{
		Addr:    "no-port",
		DB:      -1,
		Prefix:  "a{b}",
		Timeout: -time.Second,
		TLS:     server.RedisTLSConfig{CertFile: "c.pem", CAFile: "ca.pem"},
	}}
	err := c.Validate()
	if err == nil {
		t.Fatal("a broken redis store config validated")
	}
	for _, want := range []string{"store.redis.addr", "store.redis.db", "store.redis.prefix", "store.redis.timeout",
		"store.redis.tls: certFile and keyFile", "store.redis.tls: files or serverName set without enabled"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate does not mention %q:\n%v", want, err)
		}
	}
}

func TestRedisStoreConfigLoadsFromYAML(t *testing.T) {
	path := filepath.Join(t.TempDir(), "redis.yaml")
	if err := os.WriteFile(path, []byte(`
store:
  backend: redis
  redis:
    addr: 10.0.0.7:6380
    username: fencegate
    passwordFile: /etc/fencegate/redis/password
    db: 2
    prefix: payments
    timeout: 2s
    tls: {enabled: true, caFile: /etc/fencegate/redis/ca.pem, serverName: redis.internal}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := server.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := server.RedisStoreConfig{Addr: "10.0.0.7:6380", Username: "fencegate", PasswordFile: "/etc/fencegate/redis/password", DB: 2, Prefix: "payments",
		Timeout: 2 * time.Second, TLS: server.RedisTLSConfig{Enabled: true, CAFile: "/etc/fencegate/redis/ca.pem", ServerName: "redis.internal"}}
	if c.Store.Backend != "redis" || c.Store.Redis != want {
		t.Fatalf("store: %+v", c.Store)
	}
}
