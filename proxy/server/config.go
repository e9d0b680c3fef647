package server

import (
	"fmt"
	"net"
	"os"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/internal/listenaddr"
	"github.com/fencegate/fencegate/internal/redisconf"
	"github.com/fencegate/fencegate/proxy"
	"github.com/fencegate/fencegate/tlsfiles"
)

// Config is the sidecar's YAML configuration file: the pipeline's
// sections (Pipeline() hands them to proxy.New) and the binary's own: the
// listeners and their TLS, how the registry is reached, the fenced store,
// the admin token, the log level and the data directory. Load reads it,
// SetDefaults fills it, Validate checks all of it at once.
type Config struct {
	// Listen is the inbound address clients (workers) send to. Default
	// 127.0.0.1:8780; its host is FENCEGATE_LISTEN_HOST when that is set
	// (the container image sets 0.0.0.0). An explicit value always wins.
	Listen string          `yaml:"listen"`
	TLS    tlsfiles.Server `yaml:"tls"`
	// Backend is the legacy service, typically http://127.0.0.1:PORT.
	Backend proxy.BackendConfig `yaml:"backend"`
	Routes  []proxy.RouteConfig `yaml:"routes"`
	// UnmatchedMutations is reject (default) or pass (proxy.Config).
	UnmatchedMutations string            `yaml:"unmatchedMutations"`
	Identity           identity.Config   `yaml:"identity"`
	Trust              proxy.TrustConfig `yaml:"trust"`
	Registry           RegistryConfig    `yaml:"registry"`
	Store              StoreConfig       `yaml:"store"`
	Admin              AdminConfig       `yaml:"admin"`
	// Health is the unauthenticated probe and metrics listener.
	Health    HealthConfig          `yaml:"health"`
	Server    ServerConfig          `yaml:"server"`
	Reconcile proxy.ReconcileConfig `yaml:"reconcile"`
	// Retention bounds the receipts and quarantine entries the store keeps.
	Retention proxy.RetentionConfig `yaml:"retention"`
	Log       LogConfig             `yaml:"log"`
	// DataDir holds the bolt store by default (and an enforcement.json of an
	// earlier version, imported into the store at start, and the Redis
	// store's files of earlier versions).
	DataDir string `yaml:"dataDir"`

	// Upgrades lists the only protocol upgrades let through (proxy.Config).
	Upgrades []proxy.UpgradeConfig `yaml:"upgrades"`

	// Forwarded says whose X-Forwarded-* and Forwarded headers are kept.
	Forwarded proxy.ForwardedConfig `yaml:"forwarded"`
}

// Pipeline is the pipeline's settings from the file, for proxy.New.
func (c Config) Pipeline() proxy.Config {
	return proxy.Config{
		Backend:            c.Backend,
		Routes:             c.Routes,
		UnmatchedMutations: c.UnmatchedMutations,
		Identity:           c.Identity,
		Trust:              c.Trust,
		StatusTimeout:      c.Registry.Timeout,
		Reconcile:          c.Reconcile,
		Retention:          c.Retention,
		Upgrades:           c.Upgrades,
		Forwarded:          c.Forwarded,
		PassWriteTimeout:   c.Server.PassWriteTimeout,
	}
}

// setPipeline writes the pipeline's settings p back into the file's
// sections (the inverse of Pipeline).
func (c *Config) setPipeline(p proxy.Config) {
	c.Backend, c.Routes, c.UnmatchedMutations, c.Identity, c.Trust = p.Backend, p.Routes, p.UnmatchedMutations, p.Identity, p.Trust
	c.Registry.Timeout, c.Reconcile, c.Retention, c.Upgrades, c.Forwarded = p.StatusTimeout, p.Reconcile, p.Retention, p.Upgrades, p.Forwarded
	c.Server.PassWriteTimeout = p.PassWriteTimeout
}

// RepairWindow is the pipeline's proxy.Config.RepairWindow.
func (c Config) RepairWindow() time.Duration { return c.Pipeline().RepairWindow() }

// RegistryConfig is how the sidecar reaches the registry (status mode
// registry, the store's anchor and claim): its client is built from URL and
// the files; Timeout bounds a status read (the pipeline's
// proxy.Config.StatusTimeout, default proxy.DefaultStatusTimeout) and the
// anchor's registry calls.
type RegistryConfig struct {
	URL      string        `yaml:"url"`
	CertFile string        `yaml:"certFile"`
	KeyFile  string        `yaml:"keyFile"`
	CAFile   string        `yaml:"caFile"`
	Timeout  time.Duration `yaml:"timeout"`
}

// StoreConfig selects the fenced store.
type StoreConfig struct {
	// Backend is bolt (default, durable, one per pod), redis (shared by
	// every replica; see package store/redis), postgres (shared by every
	// replica; see package store/postgres) or memory (tests only).
	Backend string `yaml:"backend"`
	// Path is the bolt file (default DataDir/store.db).
	Path string `yaml:"path"`
	// Redis is the redis backend's server (required for backend redis).
	Redis RedisStoreConfig `yaml:"redis"`
	// Postgres is the postgres backend's database (required for backend
	// postgres).
	Postgres PostgresStoreConfig `yaml:"postgres"`
	// Service names the fenced store at the registry (required for bolt,
	// redis and postgres; optional for memory, which is anchored when it and
	// registry.url are set): 1..128 bytes of [A-Za-z0-9._-]. The registry
	// keeps the store's generation, per resource the progress the store
	// must cover, and its enforcement ledger under this name (the outside
	// anchor, package store/anchor), so a store that lost data is caught by
	// every sidecar, a new pod included. A local store (bolt, memory)
	// serves one replica only: at start the sidecar also claims the service
	// by holding a lease on the resource "fencegate-store/<service>" at the
	// registry, refuses to start while another sidecar holds it, and
	// refuses writes (STORE_UNAVAILABLE) whenever it loses it.
	Service string `yaml:"service"`
	// ClaimTTL is the claim lease's TTL (default 15s); a second sidecar
	// waits up to one ClaimTTL (a restarted pod's old claim can expire)
	// before refusing to start.
	ClaimTTL time.Duration `yaml:"claimTTL"`
	// Identity is the identity of the store's registry calls (its anchor
	// and a local store's claim), sent in the identity header
	// (X-Fencegate-Identity) for a registry in header or insecure-dev mode
	// (development, the demo); default: Service when registry.certFile is
	// unset. With mTLS the client certificate (registry.certFile) is the
	// caller and no header is sent. The policy of the resource
	// "fencegate-store/<service>" at the registry says who may call.
	Identity string `yaml:"identity"`
	// ClaimIdentity is Identity's earlier name, still read (SetDefaults
	// copies it to Identity).
	ClaimIdentity string `yaml:"claimIdentity"`
}

// Anchored reports whether the store's progress is anchored at the
// registry (store/anchor): whenever store.service and registry.url are
// both set, which Validate requires for bolt, redis and postgres.
func (c Config) Anchored() bool { return c.Store.Service != "" && c.Registry.URL != "" }

// DefaultClaimTTL is the default store.claimTTL.
const DefaultClaimTTL = 15 * time.Second

// ClaimResource is the registry resource a local store's claim on its
// service holds.
func (s StoreConfig) ClaimResource() string { return "fencegate-store/" + s.Service }

// Claimed reports whether the sidecar claims store.service at the
// registry: always for bolt, for memory (tests only) when store.service
// is set, never for redis or postgres (shared by every replica).
func (s StoreConfig) Claimed() bool {
	return s.Backend == "bolt" || (s.Backend == "memory" && s.Service != "")
}

// RedisStoreConfig is the Redis server of the redis store backend, with
// the rules of the registry's redis section (one type, one validator): a
// single primary, which should run with appendonly yes and appendfsync
// always for acknowledged writes to survive its crash.
type RedisStoreConfig = redisconf.Config

// RedisTLSConfig is the TLS client side of the connection to Redis: enabled,
// caFile, certFile, keyFile, serverName (default: addr's host).
type RedisTLSConfig = tlsfiles.ClientConfig

// AdminConfig is the admin listener.
type AdminConfig struct {
	// Listen defaults to 127.0.0.1:8781 whatever FENCEGATE_LISTEN_HOST
	// says: the admin API stays on loopback unless configured explicitly.
	Listen string `yaml:"listen"`
	// TokenFile holds a bearer token; without it only loopback callers are served.
	TokenFile string `yaml:"tokenFile"`
}

// HealthConfig is the health listener: GET and HEAD of /healthz, /readyz
// and /metrics, without credentials, for kubelet probes and Prometheus.
// Nothing else is served there (no admin route, no profile, nothing that
// changes state); the admin listener keeps serving the same three paths.
type HealthConfig struct {
	// Listen defaults to 127.0.0.1:8782, its host FENCEGATE_LISTEN_HOST
	// when that is set. When listen's port is 0 (a port of the system's
	// choice, as tests use) the default port is 0 as well.
	Listen string `yaml:"listen"`
}

// Default ports of the listeners.
const (
	DefaultListenPort  = "8780"
	DefaultAdminListen = "127.0.0.1:8781"
	DefaultHealthPort  = "8782"
)

// ServerConfig tunes the inbound HTTP server.
type ServerConfig struct {
	ReadHeaderTimeout time.Duration `yaml:"readHeaderTimeout"`
	ReadTimeout       time.Duration `yaml:"readTimeout"`
	WriteTimeout      time.Duration `yaml:"writeTimeout"`
	IdleTimeout       time.Duration `yaml:"idleTimeout"`
	MaxHeaderBytes    int           `yaml:"maxHeaderBytes"`

	// PassWriteTimeout bounds writing a pass-through's answer (reads,
	// unmatched mutations passed, routes in mode off, shadow passes) from
	// the start of the pass-through, instead of WriteTimeout, which bounds
	// the answers of protected writes and refusals. 0 (default): none, a
	// read streams as long as the backend does. The pipeline's setting
	// (proxy.Config.PassWriteTimeout).
	PassWriteTimeout time.Duration `yaml:"passWriteTimeout"`
}

// LogConfig sets the log level.
type LogConfig struct {
	Level string `yaml:"level"`
}

// Load reads a YAML file and fills the defaults. Unknown keys are errors.
func Load(path string) (Config, error) {
	var c Config
	f, err := os.Open(path)
	if err != nil {
		return c, fmt.Errorf("proxy: config: %w", err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("proxy: config %s: %w", path, err)
	}
	c.SetDefaults()
	return c, nil
}

func setDur(d *time.Duration, v time.Duration) {
	if *d == 0 {
		*d = v
	}
}

// SetDefaults fills every unset field with its default: the pipeline's
// (proxy.Config.SetDefaults), then the binary's.
func (c *Config) SetDefaults() {
	p := c.Pipeline()
	p.SetDefaults()
	c.setPipeline(p)
	c.setListenDefaults()
	c.Store.setDefaults(c.DataDir)
	if c.Store.Identity == "" && c.Registry.CertFile == "" {
		// No client certificate: the registry can only know the store's
		// calls by the identity header (a development registry in
		// insecure-dev or header mode), so send the store's name.
		c.Store.Identity = c.Store.Service
	}
	setDur(&c.Server.ReadHeaderTimeout, 5*time.Second)
	setDur(&c.Server.ReadTimeout, 30*time.Second)
	setDur(&c.Server.WriteTimeout, c.Backend.Timeout+30*time.Second)
	setDur(&c.Server.IdleTimeout, 120*time.Second)
	if c.Server.MaxHeaderBytes == 0 {
		c.Server.MaxHeaderBytes = 64 << 10
	}
	if c.Log.Level == "" {
		c.Log.Level = "info"
	}
}

// setListenDefaults fills the three listeners' addresses.
func (c *Config) setListenDefaults() {
	if c.Listen == "" {
		c.Listen = listenaddr.Default(DefaultListenPort)
	}
	if c.Health.Listen == "" {
		port := DefaultHealthPort
		if _, p, err := net.SplitHostPort(c.Listen); err == nil && p == "0" {
			port = "0"
		}
		c.Health.Listen = listenaddr.Default(port)
	}
	if c.Admin.Listen == "" {
		c.Admin.Listen = DefaultAdminListen
	}
}

func (s *StoreConfig) setDefaults(dataDir string) {
	if s.Backend == "" {
		s.Backend = "bolt"
	}
	if s.Path == "" && dataDir != "" {
		s.Path = dataDir + "/store.db"
	}
	setDur(&s.ClaimTTL, DefaultClaimTTL)
	if s.Identity == "" {
		s.Identity = s.ClaimIdentity
	}
}
