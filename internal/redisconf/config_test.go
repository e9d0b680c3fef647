package redisconf_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/internal/redisconf"
	"github.com/fencegate/fencegate/tlsfiles"
)

// TestValidateOneRuleSet: the registry's redis and the sidecar's
// store.redis follow the same rules, each error named under the section.
func TestValidateOneRuleSet(t *testing.T) {
	ok := redisconf.Config{Addr: "redis.internal:6379", Username: "fg", PasswordFile: "/run/secrets/pw", DB: 2, Prefix: "svc-a.v1",
		Timeout: time.Second, MinReplicas: 1, ReplicaTimeout: time.Second}
	for _, section := range []string{"redis", "store.redis"} {
		if errs := ok.Validate(section); len(errs) != 0 {
			t.Fatalf("%s: a valid config: %v", section, errors.Join(errs...))
		}
	}
	for _, tc := range []struct {
		name string
		mut  func(*redisconf.Config)
		want string
	}{
		{"no addr", func(c *redisconf.Config) { c.Addr = "" }, "store.redis.addr: required"},
		{"addr without port", func(c *redisconf.Config) { c.Addr = "redis" }, "store.redis.addr: \"redis\""},
		{"inline password", func(c *redisconf.Config) { c.Password = "pw" }, "store.redis.password: a password written into the configuration is refused; put it in a file (a mounted Secret) and name it in store.redis.passwordFile"},
		{"negative db", func(c *redisconf.Config) { c.DB = -1 }, "store.redis.db: -1 must not be negative"},
		{"prefix with braces", func(c *redisconf.Config) { c.Prefix = "a{b}" }, "store.redis.prefix"},
		{"prefix with a space", func(c *redisconf.Config) { c.Prefix = "a b" }, "store.redis.prefix"},
		{"prefix too long", func(c *redisconf.Config) { c.Prefix = strings.Repeat("p", redisconf.MaxPrefixLen+1) }, "store.redis.prefix"},
		{"negative timeout", func(c *redisconf.Config) { c.Timeout = -time.Second }, "store.redis.timeout"},
		{"negative replicas", func(c *redisconf.Config) { c.MinReplicas = -1 }, "store.redis: minReplicas and replicaTimeout must not be negative"},
		{"tls files without enabled", func(c *redisconf.Config) { c.TLS = tlsfiles.ClientConfig{CAFile: "ca.pem"} }, "store.redis.tls: files or serverName set without enabled"},
	} {
		c := ok
		tc.mut(&c)
		err := errors.Join(c.Validate("store.redis")...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	// An empty password (an earlier registry example's password: "") and
	// an empty prefix (the backend's default) are fine.
	c := ok
	c.Password, c.Prefix = "", ""
	if errs := c.Validate("redis"); len(errs) != 0 {
		t.Fatal(errors.Join(errs...))
	}
	// Every problem at once.
	bad := redisconf.Config{Addr: "x", Password: "p", DB: -1, Prefix: "{", Timeout: -1}
	if n := len(bad.Validate("redis")); n != 5 {
		t.Fatalf("%d errors, want 5: %v", n, errors.Join(bad.Validate("redis")...))
	}
}

func TestReadPassword(t *testing.T) {
	if pw, err := (redisconf.Config{}).ReadPassword("redis"); pw != "" || err != nil {
		t.Fatalf("no file: %q %v", pw, err)
	}
	path := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(path, []byte("s3cret\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if pw, err := (redisconf.Config{PasswordFile: path}).ReadPassword("redis"); pw != "s3cret" || err != nil {
		t.Fatalf("%q %v", pw, err)
	}
	_, err := (redisconf.Config{PasswordFile: path + ".missing"}).ReadPassword("store.redis")
	if err == nil || !strings.Contains(err.Error(), "store.redis.passwordFile") {
		t.Fatalf("a missing file: %v", err)
	}
}
