package server_test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/proxy"
	"github.com/fencegate/fencegate/proxy/server"
)

// validConfig is a configuration Validate accepts (defaults filled).
func validConfig(t *testing.T) server.Config {
	c := server.Config{
		Listen:   "127.0.0.1:0",
		Backend:  proxy.BackendConfig{URL: "http://127.0.0.1:8080"},
		Routes:   []proxy.RouteConfig{{Method: "PUT", Path: "/v1/items/{id}", Resource: "item/{id}", Status: proxy.RouteStatus{Mode: proxy.StatusProof}}},
		Identity: identity.Config{Mode: identity.ModeInsecureHeader},
		Trust:    proxy.TrustConfig{Bundle: filepath.Join(t.TempDir(), "jwks.json")},
		Store:    server.StoreConfig{Backend: "memory"},
		DataDir:  t.TempDir(),
	}
	c.SetDefaults()
	if err := c.Validate(); err != nil {
		t.Fatalf("the base configuration does not validate: %v", err)
	}
	return c
}

// TestValidateRejectsNegativesAndBadReadPathConfig (issue 8.13, 8.1, 8.3):
// a negative duration or limit is an error (it used to panic a goroutine
// or silently turn a timeout off), zero is the default, and route methods
// and upgrades entries are checked.
func TestValidateRejectsNegativesAndBadReadPathConfig(t *testing.T) {
	neg := -time.Second
	cases := []struct {
		name string
		mut  func(*server.Config)
		want []string // substrings of the error; none: valid
	}{
		{"base", func(*server.Config) {}, nil},
		{"reconcile.interval", func(c *server.Config) { c.Reconcile.Interval = neg }, []string{"reconcile.interval"}},
		{"server.readHeaderTimeout", func(c *server.Config) { c.Server.ReadHeaderTimeout = neg }, []string{"server.readHeaderTimeout"}},
		{"server.readTimeout", func(c *server.Config) { c.Server.ReadTimeout = neg }, []string{"server.readTimeout"}},
		{"server.writeTimeout", func(c *server.Config) { c.Server.WriteTimeout = neg }, []string{"server.writeTimeout"}},
		{"server.idleTimeout", func(c *server.Config) { c.Server.IdleTimeout = neg }, []string{"server.idleTimeout"}},
		{"server.maxHeaderBytes", func(c *server.Config) { c.Server.MaxHeaderBytes = -1 }, []string{"server.maxHeaderBytes"}},
		{"backend.timeout", func(c *server.Config) { c.Backend.Timeout = neg }, []string{"backend.timeout"}},
		{"backend.timeout huge", func(c *server.Config) { c.Backend.Timeout = 30 * time.Hour }, []string{"backend.timeout"}},
		{"backend.maxApplyDelay", func(c *server.Config) { c.Backend.MaxApplyDelay = neg }, []string{"backend.maxApplyDelay"}},
		{"backend.maxApplyDelay huge", func(c *server.Config) { c.Backend.MaxApplyDelay = proxy.MaxApplyDelayLimit + time.Second }, []string{"backend.maxApplyDelay"}},
		{"backend.maxApplyDelay at its limit", func(c *server.Config) { c.Backend.MaxApplyDelay = proxy.MaxApplyDelayLimit }, nil},
		{"route effectQueryCloses without effectQuery", func(c *server.Config) { c.Routes[0].EffectQueryCloses = true }, []string{"routes[0].effectQueryCloses"}},
		{"route effectQueryCloses", func(c *server.Config) {
			c.Routes[0].EffectQuery, c.Routes[0].EffectQueryCloses = "http://127.0.0.1:8080/effects/{operationId}", true
		}, nil},
		{"retention.maxAge", func(c *server.Config) { c.Retention.MaxAge = neg }, []string{"retention.maxAge"}},
		{"retention.maxPerResource", func(c *server.Config) { c.Retention.MaxPerResource = -1 }, []string{"retention.maxPerResource"}},
		{"retention.batchSize", func(c *server.Config) { c.Retention.BatchSize = 1 << 30 }, []string{"retention.batchSize"}},
		{"backend.dialTimeout", func(c *server.Config) { c.Backend.DialTimeout = neg }, []string{"backend.dialTimeout"}},
		{"backend.idleConnTimeout", func(c *server.Config) { c.Backend.IdleConnTimeout = neg }, []string{"backend.idleConnTimeout"}},
		{"backend.maxIdleConnsPerHost", func(c *server.Config) { c.Backend.MaxIdleConnsPerHost = -1 }, []string{"backend.maxIdleConnsPerHost"}},
		{"backend.maxIdleConnsPerHost huge", func(c *server.Config) { c.Backend.MaxIdleConnsPerHost = math.MaxInt }, []string{"backend.maxIdleConnsPerHost"}},
		{"backend.maxConnsPerHost", func(c *server.Config) { c.Backend.MaxConnsPerHost = -1 }, []string{"backend.maxConnsPerHost"}},
		{"backend.maxResponseBytes", func(c *server.Config) { c.Backend.MaxResponseBytes = -1 }, []string{"backend.maxResponseBytes"}},
		{"registry.timeout", func(c *server.Config) { c.Registry.Timeout = neg }, []string{"registry.timeout"}},
		{"trust.clockSkew", func(c *server.Config) { c.Trust.ClockSkew = neg }, []string{"trust.clockSkew"}},
		{"trust.reloadInterval", func(c *server.Config) { c.Trust.ReloadInterval = neg }, []string{"trust.reloadInterval"}},
		{"trust.maxTokenBytes", func(c *server.Config) { c.Trust.MaxTokenBytes = -1 }, []string{"trust.maxTokenBytes"}},
		{"route busyWait", func(c *server.Config) { c.Routes[0].BusyWait = neg }, []string{"routes[0].busyWait"}},
		{"route status.maxAge", func(c *server.Config) { c.Routes[0].Status.MaxAge = neg }, []string{"routes[0].status.maxAge"}},
		{"route bodyLimit", func(c *server.Config) { c.Routes[0].BodyLimit = -1 }, []string{"routes[0].bodyLimit"}},
		{"route bodyLimit max", func(c *server.Config) { c.Routes[0].BodyLimit = math.MaxInt64 }, []string{"routes[0].bodyLimit"}},
		{"route responseStoreLimit", func(c *server.Config) { c.Routes[0].ResponseStoreLimit = -1 }, []string{"routes[0].responseStoreLimit"}},
		{"every negative at once", func(c *server.Config) {
			c.Reconcile.Interval, c.Server.ReadHeaderTimeout, c.Server.ReadTimeout, c.Server.WriteTimeout, c.Server.IdleTimeout = neg, neg, neg, neg, neg
			c.Backend.IdleConnTimeout, c.Backend.MaxIdleConnsPerHost, c.Backend.MaxResponseBytes = neg, -1, -1
			c.Registry.Timeout, c.Trust.ClockSkew, c.Routes[0].BusyWait, c.Routes[0].Status.MaxAge = neg, neg, neg, neg
		}, []string{"reconcile.interval", "server.readHeaderTimeout", "server.readTimeout", "server.writeTimeout", "server.idleTimeout",
			"backend.idleConnTimeout", "backend.maxIdleConnsPerHost", "backend.maxResponseBytes", "registry.timeout", "trust.clockSkew",
			"routes[0].busyWait", "routes[0].status.maxAge"}},
		{"zero means the default", func(c *server.Config) {
			c.Reconcile.Interval, c.Server.ReadTimeout, c.Backend.IdleConnTimeout, c.Trust.ClockSkew, c.Routes[0].BusyWait = 0, 0, 0, 0, 0
			c.Backend.MaxApplyDelay = 0
			c.SetDefaults()
			if c.Backend.MaxApplyDelay != proxy.DefaultMaxApplyDelay {
				t.Errorf("backend.maxApplyDelay unset: %v, want the default %v", c.Backend.MaxApplyDelay, proxy.DefaultMaxApplyDelay)
			}
		}, nil},

		{"route method GET", func(c *server.Config) { c.Routes[0].Method = "GET" }, []string{"routes[0].method"}},
		{"route method head", func(c *server.Config) { c.Routes[0].Method = "head" }, []string{"routes[0].method"}},
		{"route method Options", func(c *server.Config) { c.Routes[0].Method = "Options" }, []string{"routes[0].method"}},
		{"route method TRACE", func(c *server.Config) { c.Routes[0].Method = "TRACE" }, []string{"routes[0].method"}},
		{"route method empty", func(c *server.Config) { c.Routes[0].Method = "" }, []string{"routes[0].method"}},
		{"route method with a space", func(c *server.Config) { c.Routes[0].Method = "PUT X" }, []string{"routes[0].method"}},
		{"route method non-ASCII", func(c *server.Config) { c.Routes[0].Method = "poſt" }, []string{"routes[0].method"}},
		{"route method PROPPATCH", func(c *server.Config) { c.Routes[0].Method = "PROPPATCH" }, nil},
		{"route method lower-case merge", func(c *server.Config) { c.Routes[0].Method = "merge" }, nil},
		{"route method CONNECT", func(c *server.Config) { c.Routes[0].Method = "CONNECT" }, nil},
		{"route twice, case apart", func(c *server.Config) {
			c.Routes = append(c.Routes, c.Routes[0])
			c.Routes[1].Method = "put"
		}, []string{"configured twice"}},
		{"route bad pattern", func(c *server.Config) { c.Routes[0].Path = "/v1/items/{id" }, []string{"routes[0].path"}},
		{"route catch-all not last", func(c *server.Config) { c.Routes[0].Path = "/v1/*/x" }, []string{"routes[0].path"}},
		{"route regexp parameter in the resource", func(c *server.Config) {
			c.Routes[0].Path, c.Routes[0].Resource = "/v1/items/{id:[0-9]{1,9}}", "item/{id}"
		}, nil},
		{"off route overlapping the enforced one", func(c *server.Config) {
			c.Routes = append(c.Routes, proxy.RouteConfig{Method: "PUT", Path: "/v1/items/42", Resource: "x", Mode: proxy.ModeOff, Status: proxy.RouteStatus{Mode: proxy.StatusProof}})
			c.SetDefaults()
		}, []string{"routes[1]: proxy: a route below enforce overlaps an enforced route: PUT /v1/items/42 in off", `routes[0] PUT /v1/items/{id} (for example "/v1/items/42")`}},
		{"shadow catch-all and an off literal, both overlapping", func(c *server.Config) {
			c.Routes = append(c.Routes,
				proxy.RouteConfig{Method: "PUT", Path: "/*", Resource: "x", Mode: proxy.ModeShadow, Status: proxy.RouteStatus{Mode: proxy.StatusProof}},
				proxy.RouteConfig{Method: "PUT", Path: "/v1/items/1", Resource: "y", Mode: proxy.ModeOff, Status: proxy.RouteStatus{Mode: proxy.StatusProof}})
			c.SetDefaults()
		}, []string{"routes[1]: proxy: a route below enforce overlaps an enforced route: PUT /* in shadow", "routes[2]: proxy: a route below enforce overlaps an enforced route: PUT /v1/items/1 in off"}},
		{"shadow and off overlapping each other", func(c *server.Config) {
			c.Routes = append(c.Routes,
				proxy.RouteConfig{Method: "POST", Path: "/v1/*", Resource: "x", Mode: proxy.ModeShadow, Status: proxy.RouteStatus{Mode: proxy.StatusProof}},
				proxy.RouteConfig{Method: "POST", Path: "/v1/a", Resource: "y", Mode: proxy.ModeOff, Status: proxy.RouteStatus{Mode: proxy.StatusProof}})
			c.SetDefaults()
		}, nil},

		{"upgrade websocket", func(c *server.Config) {
			c.Upgrades = []proxy.UpgradeConfig{{Path: "/ws/{room}", Protocols: []string{"websocket"}}}
		}, nil},
		{"upgrade h2c", func(c *server.Config) {
			c.Upgrades = []proxy.UpgradeConfig{{Path: "/ws", Protocols: []string{"websocket", "H2C"}}}
		}, []string{"upgrades[0].protocols[1]", "h2c"}},
		{"upgrade without protocols", func(c *server.Config) { c.Upgrades = []proxy.UpgradeConfig{{Path: "/ws"}} }, []string{"upgrades[0].protocols"}},
		{"upgrade protocol with a version", func(c *server.Config) {
			c.Upgrades = []proxy.UpgradeConfig{{Path: "/ws", Protocols: []string{"websocket/13"}}}
		}, []string{"upgrades[0].protocols[0]"}},
		{"upgrade relative path", func(c *server.Config) {
			c.Upgrades = []proxy.UpgradeConfig{{Path: "ws", Protocols: []string{"websocket"}}}
		}, []string{"upgrades[0].path"}},
		{"upgrade bad pattern", func(c *server.Config) {
			c.Upgrades = []proxy.UpgradeConfig{{Path: "/ws/{room", Protocols: []string{"websocket"}}}
		}, []string{"upgrades[0].path"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig(t)
			tc.mut(&c)
			err := c.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error does not mention %q:\n%v", w, err)
				}
			}
			// Each wanted field is its own error: every one is reported at once.
			if n := strings.Count(err.Error(), "\n") + 1; len(tc.want) > 2 && n < len(tc.want) {
				t.Errorf("%d errors reported, want at least %d:\n%v", n, len(tc.want), err)
			}
		})
	}
}

// TestUpgradesLoadFromYAML: the upgrades keys docs/proxy.example.yaml
// documents are the ones LoadConfig reads.
func TestUpgradesLoadFromYAML(t *testing.T) {
	path := filepath.Join(t.TempDir(), "upgrades.yaml")
	if err := os.WriteFile(path, []byte("upgrades:\n  - path: /ws/{room}\n    protocols: [websocket]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := server.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Upgrades) != 1 || c.Upgrades[0].Path != "/ws/{room}" || len(c.Upgrades[0].Protocols) != 1 || c.Upgrades[0].Protocols[0] != "websocket" {
		t.Fatalf("upgrades: %+v", c.Upgrades)
	}
}
