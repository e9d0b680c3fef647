package server

import (
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/proxy"
)

// TestLocalStoreConfigNeedsServiceAndRegistry (issue 10.3): Validate
// reports a bolt store without store.service or registry.url (the claim
// lives in the registry), a memory store naming a service without a
// registry, and a service that cannot name a registry resource; a plain
// memory store needs neither. A redis store needs both too (issue 19: its
// outside anchor lives in the registry), and a service must be a store
// name ([A-Za-z0-9._-]); store.identity and its earlier name claimIdentity
// may not disagree.
func TestLocalStoreConfigNeedsServiceAndRegistry(t *testing.T) {
	base := Config{
		Listen:   "127.0.0.1:0",
		Backend:  proxy.BackendConfig{URL: "http://127.0.0.1:8080"},
		Routes:   []proxy.RouteConfig{{Method: "PUT", Path: "/v1/items/{id}", Resource: "item/{id}", Status: proxy.RouteStatus{Mode: proxy.StatusProof}}},
		Identity: identity.Config{Mode: identity.ModeInsecureHeader},
		Trust:    proxy.TrustConfig{Bundle: "/tmp/jwks.json"},
		DataDir:  t.TempDir(),
	}
	for _, tc := range []struct {
		name     string
		store    StoreConfig
		registry string
		want     []string // substrings of the error; none: valid
	}{
		{"bolt bare", StoreConfig{Backend: "bolt"}, "", []string{"store.service: required for the bolt store", "registry.url: required", "by the bolt store"}},
		{"bolt no registry", StoreConfig{Backend: "bolt", Service: "svc"}, "", []string{`registry.url: required (http(s)://host:port) by the bolt store: its claim on store.service "svc"`}},
		{"bolt ok", StoreConfig{Backend: "bolt", Service: "svc"}, "http://127.0.0.1:8700", nil},
		{"bolt bad service", StoreConfig{Backend: "bolt", Service: "a/b"}, "http://127.0.0.1:8700", []string{`store.service: "a/b"`}},
		{"bolt bad ttl", StoreConfig{Backend: "bolt", Service: "svc", ClaimTTL: -time.Second}, "http://127.0.0.1:8700", []string{"store.claimTTL"}},
		{"memory bare", StoreConfig{Backend: "memory"}, "", nil},
		{"memory service", StoreConfig{Backend: "memory", Service: "svc"}, "", []string{"registry.url: required", "by the memory store"}},
		{"redis bare", StoreConfig{Backend: "redis", Redis: RedisStoreConfig{Addr: "127.0.0.1:6379"}}, "", []string{"store.service: required for the redis store", "registry.url: required (http(s)://host:port) by the redis store"}},
		{"redis ok", StoreConfig{Backend: "redis", Service: "svc", Redis: RedisStoreConfig{Addr: "127.0.0.1:6379"}}, "http://127.0.0.1:8700", nil},
		{"redis service not a store name", StoreConfig{Backend: "redis", Service: "svc:1", Redis: RedisStoreConfig{Addr: "127.0.0.1:6379"}}, "http://127.0.0.1:8700", []string{`store.service: "svc:1" must be 1 to 128 bytes of [A-Za-z0-9._-]`}},
		{"memory anchored", StoreConfig{Backend: "memory", Service: "svc"}, "http://127.0.0.1:8700", nil},
		{"identity and claimIdentity", StoreConfig{Backend: "bolt", Service: "svc", Identity: "a", ClaimIdentity: "b"}, "http://127.0.0.1:8700", []string{"store.identity and store.claimIdentity"}},
		{"claimIdentity alone", StoreConfig{Backend: "bolt", Service: "svc", ClaimIdentity: "b"}, "http://127.0.0.1:8700", nil},
	} {
		c := base
		c.Store, c.Registry.URL = tc.store, tc.registry
		c.SetDefaults()
		err := c.Validate()
		if len(tc.want) == 0 {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: validated", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v\nlacks %q", tc.name, err, w)
			}
		}
	}
}
