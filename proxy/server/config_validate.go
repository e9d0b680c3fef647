package server

import (
	"net"
	"net/url"
	"strings"

	"go.uber.org/zap/zapcore"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/internal/confcheck"
	"github.com/fencegate/fencegate/proxy"
)

// Validate reports every problem of the file at once: the pipeline's
// sections (proxy.Config.Validate) and the binary's, one validator per
// section, each pure (it reads no file and changes nothing). Run it after
// SetDefaults (Load does).
func (c Config) Validate() error {
	var p confcheck.Problems
	p.AppendErr(c.Pipeline().Validate())
	p.Append(c.validateListeners()...)
	p.Append(c.validateTLS()...)
	p.Append(c.Server.validate()...)
	p.Append(c.validateRegistry()...)
	p.Append(c.Store.validate(c.Registry.URL)...)
	if c.DataDir == "" {
		p.Add("dataDir: required (the bolt store lives there by default)")
	}
	if _, err := zapcore.ParseLevel(c.Log.Level); err != nil {
		p.Add("log.level: %v", err)
	}
	return p.Err()
}

// validateListeners reports the problems of the three listen addresses.
func (c Config) validateListeners() []error {
	var p confcheck.Problems
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		p.Add("listen: %q: %v", c.Listen, err)
	}
	if _, _, err := net.SplitHostPort(c.Admin.Listen); err != nil {
		p.Add("admin.listen: %q: %v", c.Admin.Listen, err)
	}
	if _, port, err := net.SplitHostPort(c.Health.Listen); err != nil {
		p.Add("health.listen: %q: %v", c.Health.Listen, err)
	} else if port != "0" && (c.Health.Listen == c.Listen || c.Health.Listen == c.Admin.Listen) {
		p.Add("health.listen: %q is also listen or admin.listen; the health listener needs its own address", c.Health.Listen)
	}
	return p
}

// validateTLS reports the problems of the inbound TLS files, and an mTLS
// identity without the client CA that verifies it.
func (c Config) validateTLS() []error {
	var p confcheck.Problems
	if c.Identity.Mode == identity.ModeMTLS && c.TLS.ClientCAFile == "" {
		p.Add("identity.mode: mtls needs tls.clientCAFile")
	}
	p.Append(c.TLS.Validate("tls")...)
	return p
}

// validate reports the problems of the inbound server's timeouts and
// limits (passWriteTimeout is the pipeline's).
func (s ServerConfig) validate() []error {
	var p confcheck.Problems
	p.Duration("server.readHeaderTimeout", s.ReadHeaderTimeout)
	p.Duration("server.readTimeout", s.ReadTimeout)
	p.Duration("server.writeTimeout", s.WriteTimeout)
	p.Duration("server.idleTimeout", s.IdleTimeout)
	p.Count("server.maxHeaderBytes", int64(s.MaxHeaderBytes))
	return p
}

// validateRegistry reports a registry.url that routes in status mode
// registry need (the store's own needs: StoreConfig.validate).
func (c Config) validateRegistry() []error {
	var p confcheck.Problems
	for _, r := range c.Routes {
		if r.Status.Mode == proxy.StatusRegistry {
			if !httpURL(c.Registry.URL) {
				p.Add("registry.url: required (http(s)://host:port) by routes in status mode registry")
			}
			break
		}
	}
	return p
}

// httpURL reports whether s is http(s)://host[:port]...
func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// validate reports the problems of the store section; registryURL is
// registry.url, which bolt and redis need.
func (s StoreConfig) validate(registryURL string) []error {
	var p confcheck.Problems
	switch s.Backend {
	case "bolt":
		if s.Path == "" {
			p.Add("store.path: required for the bolt store (or set dataDir)")
		}
		if s.Service == "" {
			p.Add("store.service: required for the bolt store: a local store keeps the fences of one replica only, so the sidecar claims the service at the registry and a second replica refuses to start (use store.backend redis for several replicas); the registry also anchors the store's progress under that name")
		}
	case "redis":
		p.Append(s.Redis.Validate("store.redis")...)
		if s.Service == "" {
			p.Add("store.service: required for the redis store: the registry anchors the store's generation, progress and enforcement ledger under that name, so that every sidecar, a new pod included, sees a Redis that lost data")
		}
		if !httpURL(registryURL) {
			p.Add("registry.url: required (http(s)://host:port) by the redis store: its outside anchor (generation, progress, ledger) lives in the registry")
		}
	case "postgres":
		p.Append(s.Postgres.validate("store.postgres")...)
		if s.Service == "" {
			p.Add("store.service: required for the postgres store: the registry anchors the store's generation, progress and enforcement ledger under that name, so that every sidecar, a new pod included, sees a database that lost data")
		}
		if !httpURL(registryURL) {
			p.Add("registry.url: required (http(s)://host:port) by the postgres store: its outside anchor (generation, progress, ledger) lives in the registry")
		}
	case "memory":
	default:
		p.Add("store.backend: %q is not bolt, redis, postgres or memory", s.Backend)
	}
	p.Append(s.validateClaim(registryURL)...)
	if s.Service != "" {
		if err := fencegate.ValidateStoreName(s.Service); err != nil {
			p.Add("store.service: %q must be 1 to %d bytes of [A-Za-z0-9._-] (it names the store at the registry)", s.Service, fencegate.MaxStoreNameLen)
		}
	}
	if s.ClaimIdentity != "" && s.Identity != s.ClaimIdentity {
		p.Add("store.identity and store.claimIdentity (its earlier name) differ: set store.identity only")
	}
	return p
}

// validateClaim reports the problems of a local store's claim on its
// service (store.service, store.claimTTL, registry.url).
func (s StoreConfig) validateClaim(registryURL string) []error {
	if !s.Claimed() {
		return nil
	}
	var p confcheck.Problems
	if s.Service != "" {
		if err := fencegate.ValidateResource(s.ClaimResource()); err != nil || strings.Contains(s.Service, "/") {
			p.Add("store.service: %q must be at most 240 bytes of [A-Za-z0-9-_.:@~], not \".\" or \"..\" (it names the registry resource %q)", s.Service, s.ClaimResource())
		}
	}
	if s.ClaimTTL <= 0 {
		p.Add("store.claimTTL: %v must be positive", s.ClaimTTL)
	}
	if !httpURL(registryURL) {
		p.Add("registry.url: required (http(s)://host:port) by the %s store: its claim on store.service %q, which keeps a second replica from starting, lives in the registry", s.Backend, s.Service)
	}
	return p
}
