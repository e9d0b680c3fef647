package proxy

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap/zapcore"
	"go.yaml.in/yaml/v3"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/internal/listenaddr"
	"github.com/fencegate/fencegate/internal/redisconf"
	"github.com/fencegate/fencegate/tlsfiles"
)

// Mode is a route's rollout mode.
type Mode string

// Route modes.
const (
	ModeOff     Mode = "off"
	ModeShadow  Mode = "shadow"
	ModeEnforce Mode = "enforce"
)

// StatusMode says how a route establishes that a grant is still held.
type StatusMode string

// Status modes.
const (
	StatusProof    StatusMode = "proof"
	StatusRegistry StatusMode = "registry"
)

// Config is the sidecar's YAML configuration.
type Config struct {
	// Listen is the inbound address clients (workers) send to. Default
	// 127.0.0.1:8780; its host is FENCEGATE_LISTEN_HOST when that is set
	// (the container image sets 0.0.0.0). An explicit value always wins.
	Listen string          `yaml:"listen"`
	TLS    tlsfiles.Server `yaml:"tls"`
	// Backend is the legacy service, typically http://127.0.0.1:PORT.
	Backend BackendConfig `yaml:"backend"`
	Routes  []RouteConfig `yaml:"routes"`
	// UnmatchedMutations decides what happens to a mutating request that
	// matches no route: reject (default) or pass. Only GET, HEAD, OPTIONS
	// and TRACE, spelled exactly so, are reads; every other method is a
	// mutation. Even with pass, a mutation whose method differs only in
	// case from a route's, on a path that route matches ("put" for PUT),
	// is treated as that route's and refused (ROUTE_NOT_PROTECTED), and so
	// is one whose path a lenient backend reads as an enforced route's
	// (lenient.go), or whose decoded path holds NUL, a control character or
	// invalid UTF-8.
	UnmatchedMutations string          `yaml:"unmatchedMutations"`
	Identity           identity.Config `yaml:"identity"`
	Trust              TrustConfig     `yaml:"trust"`
	Registry           RegistryConfig  `yaml:"registry"`
	Store              StoreConfig     `yaml:"store"`
	Admin              AdminConfig     `yaml:"admin"`
	// Health is the unauthenticated probe and metrics listener.
	Health    HealthConfig    `yaml:"health"`
	Server    ServerConfig    `yaml:"server"`
	Reconcile ReconcileConfig `yaml:"reconcile"`
	// Retention bounds the receipts and quarantine entries the store keeps.
	Retention RetentionConfig `yaml:"retention"`
	Log       LogConfig       `yaml:"log"`
	// DataDir holds the bolt store by default (and an enforcement.json of an
	// earlier version, imported into the store at start).
	DataDir string `yaml:"dataDir"`

	// Upgrades lists the only protocol upgrades let through (a GET on the
	// path asking for listed protocols). Any other request asking for an
	// upgrade is refused (UPGRADE_REFUSED); h2c always is. What flows in
	// an allowed tunnel is NOT fenced.
	Upgrades []UpgradeConfig `yaml:"upgrades"`

	// Forwarded says whose X-Forwarded-* and Forwarded headers are kept
	// (forwarded.go).
	Forwarded ForwardedConfig `yaml:"forwarded"`
}

// BackendConfig tunes forwarding to the legacy service.
type BackendConfig struct {
	URL string `yaml:"url"`
	// Timeout bounds a forwarded mutation from its Begin to the end of the
	// response: the forward's deadline is taken before the store's Begin,
	// so nothing is sent after it. Past it the outcome is unknown.
	Timeout time.Duration `yaml:"timeout"`
	// MaxApplyDelay is how long after the forward's deadline the backend
	// may still apply a request it received (its own queues, a slow
	// database, a request still in the network). An unknown mutation is
	// settled as not applied only on evidence gathered after its forward's
	// deadline plus MaxApplyDelay (its quiet time), unless the route's
	// effect query closes the operation (RouteConfig.EffectQueryCloses).
	// Default DefaultMaxApplyDelay, at most MaxApplyDelayLimit.
	MaxApplyDelay       time.Duration `yaml:"maxApplyDelay"`
	DialTimeout         time.Duration `yaml:"dialTimeout"`
	MaxIdleConnsPerHost int           `yaml:"maxIdleConnsPerHost"`
	MaxConnsPerHost     int           `yaml:"maxConnsPerHost"`
	IdleConnTimeout     time.Duration `yaml:"idleConnTimeout"`
	// MaxResponseBytes is how much of a mutation's response is buffered
	// before the receipt is committed (the rest streams after).
	MaxResponseBytes int64 `yaml:"maxResponseBytes"`
}

// UpgradeConfig allows one protocol upgrade on the read path.
type UpgradeConfig struct {
	// Path is a chi pattern: /ws/{room}. Only a GET on it may upgrade.
	Path string `yaml:"path"`
	// Protocols are the Upgrade protocol names allowed (websocket); never h2c.
	Protocols []string `yaml:"protocols"`
}

// RouteConfig protects one method + path pattern.
type RouteConfig struct {
	// Method is any method token but GET, HEAD, OPTIONS and TRACE (the
	// reads); it is upper-cased. Requests match it exactly (methods are
	// case-sensitive).
	Method string `yaml:"method"`
	// Path is a chi pattern: /v1/invoice-batches/{id}.
	Path string `yaml:"path"`
	// Resource is the canonical resource ID template: invoice-batch/{id}.
	Resource string `yaml:"resource"`
	// Mode is off, shadow or enforce (default enforce).
	Mode   Mode        `yaml:"mode"`
	Status RouteStatus `yaml:"status"`
	// IdempotencyKey: the backend honours Idempotency-Key, so a mutation
	// whose outcome is unknown may be retried with the same payload.
	IdempotencyKey bool `yaml:"idempotencyKey"`
	// EffectQuery is a URL template asked during reconciliation:
	// {operationId}, {resource}, {fence} and {seq} are filled in (escaped).
	// 200 means applied (its body is the stored response), 404 not applied
	// yet: it settles the mutation as not applied only once the mutation is
	// quiet (backend.maxApplyDelay after its forward's deadline), unless
	// EffectQueryCloses.
	EffectQuery string `yaml:"effectQuery"`
	// EffectQueryCloses declares that the backend's 404 to the effect query
	// closes the operation: answering it, the backend durably records the
	// operation ID (Fence-Operation-Id, and Idempotency-Key on routes with
	// idempotencyKey) as refused, and never applies a request carrying it
	// afterwards, including one already queued or in progress inside it. A
	// 404 then settles "not applied" at once. Requires EffectQuery.
	EffectQueryCloses bool `yaml:"effectQueryCloses"`
	// ResponseStoreLimit bounds the response body kept in a receipt.
	ResponseStoreLimit int `yaml:"responseStoreLimit"`
	// BodyLimit bounds the request body (413 above it).
	BodyLimit int64 `yaml:"bodyLimit"`
	// BusyWait bounds how long a request waits while another mutation of
	// the resource is in flight.
	BusyWait time.Duration `yaml:"busyWait"`
	// AnsweredBeforeEffect lists 5xx statuses (500..599) that the route's
	// backend guarantees to answer before any effect (a validation layer
	// answering 500 to malformed input, say). Such an answer is committed
	// as a receipt like a 4xx instead of making the mutation
	// MUTATION_UNKNOWN. Empty (the default): every 5xx leaves the outcome
	// unknown, since a 5xx proves nothing about the write.
	AnsweredBeforeEffect []int `yaml:"answeredBeforeEffect"`
}

// answeredBeforeEffect reports whether the route's backend answers status
// before any effect (AnsweredBeforeEffect lists it).
func (r RouteConfig) answeredBeforeEffect(status int) bool {
	return slices.Contains(r.AnsweredBeforeEffect, status)
}

// RouteStatus says how a route establishes that a grant is still held.
type RouteStatus struct {
	// Mode is proof (a Fence-Status header) or registry (a linearizable
	// read from the registry per request). Default registry.
	Mode StatusMode `yaml:"mode"`
	// MaxAge bounds a proof's age (now - iat).
	MaxAge time.Duration `yaml:"maxAge"`
}

// TrustConfig is the fixed trust bundle.
type TrustConfig struct {
	// Bundle is a JWKS file, re-read when it changes.
	Bundle string `yaml:"bundle"`
	// AllowHS256 accepts HS256 (MAC) grants; the bundle holds the secret.
	AllowHS256     bool          `yaml:"allowHS256"`
	ReloadInterval time.Duration `yaml:"reloadInterval"`
	MaxTokenBytes  int           `yaml:"maxTokenBytes"`
	// MinIssuerEpoch rejects grants of older epochs from the start.
	MinIssuerEpoch uint64 `yaml:"minIssuerEpoch"`
	// ClockSkew tolerates a proof's iat this far in the future (default 1s).
	ClockSkew time.Duration `yaml:"clockSkew"`
	// VerifyCacheEntries bounds the cache of verified signatures (keyed by
	// the exact token bytes; everything that depends on time, the request
	// or learned state is still checked on every request). Unset: 10000;
	// 0 turns the cache off.
	VerifyCacheEntries *int `yaml:"verifyCacheEntries"`
}

// RegistryConfig is how the sidecar reaches the registry (status mode registry).
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
	// every replica; see package store/redis) or memory (tests only).
	Backend string `yaml:"backend"`
	// Path is the bolt file (default DataDir/store.db).
	Path string `yaml:"path"`
	// Redis is the redis backend's server (required for backend redis).
	Redis RedisStoreConfig `yaml:"redis"`
	// Service names the fenced store at the registry (required for bolt
	// and redis; optional for memory, which is anchored when it and
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
	// (tests, demo). Leave it empty with mTLS: the client certificate
	// (registry.certFile) is the caller. The policy of the resource
	// "fencegate-store/<service>" at the registry says who may call.
	Identity string `yaml:"identity"`
	// ClaimIdentity is Identity's earlier name, still read (SetDefaults
	// copies it to Identity).
	ClaimIdentity string `yaml:"claimIdentity"`
}

// Anchored reports whether the store's progress is anchored at the
// registry (store/anchor): whenever store.service and registry.url are
// both set, which Validate requires for bolt and redis.
func (c Config) Anchored() bool { return c.Store.Service != "" && c.Registry.URL != "" }

// DefaultClaimTTL is the default store.claimTTL.
const DefaultClaimTTL = 15 * time.Second

// ClaimResource is the registry resource a local store's claim on its
// service holds.
func (s StoreConfig) ClaimResource() string { return "fencegate-store/" + s.Service }

// Claimed reports whether the sidecar claims store.service at the
// registry: always for bolt, for memory (tests only) when store.service
// is set, never for redis (shared by every replica).
func (s StoreConfig) Claimed() bool {
	return s.Backend == "bolt" || (s.Backend == "memory" && s.Service != "")
}

// RedisStoreConfig is the Redis server of the redis store backend, with
// the rules of the registry's redis section (one type, one validator).
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
	// read streams as long as the backend does.
	PassWriteTimeout time.Duration `yaml:"passWriteTimeout"`
}

// ReconcileConfig drives automatic reconciliation through effect queries.
type ReconcileConfig struct {
	Interval time.Duration `yaml:"interval"`
}

// LogConfig sets the log level.
type LogConfig struct {
	Level string `yaml:"level"`
}

// Defaults.
const (
	DefaultBodyLimit          = 1 << 20
	DefaultResponseStoreLimit = 64 << 10
	DefaultMaxResponseBytes   = 4 << 20
	DefaultStatusMaxAge       = 5 * time.Second
	DefaultBusyWait           = 2 * time.Second
	DefaultMaxTokenBytes      = 8 << 10
	// DefaultClockSkew tolerates a registry clock slightly ahead of the
	// sidecar's: without it, a proof issued "in the future" by a few
	// milliseconds would be STATUS_STALE.
	DefaultClockSkew = time.Second
)

// MaxBackendTimeout bounds backend.timeout: a mutation's in-flight marker
// lasts the timeout plus 5s, and the store accepts at most a day.
const MaxBackendTimeout = time.Hour

// DefaultMaxApplyDelay is backend.maxApplyDelay when unset: a generous
// bound on how long an ordinary backend keeps working on a request its
// client gave up on, short enough that an unknown mutation a 404 effect
// query settles (about maxApplyDelay after its forward's deadline, plus a
// reconcile interval) stays under the 15-minute UNKNOWN target with the
// default backend.timeout.
const DefaultMaxApplyDelay = 10 * time.Minute

// MaxApplyDelayLimit bounds backend.maxApplyDelay: the quiet time
// (backend.timeout + maxApplyDelay after Begin) must fit the store's
// in-flight window. A backend that may apply later than this needs an
// effect query that closes the operation (effectQueryCloses).
const MaxApplyDelayLimit = 12 * time.Hour

// UnknownTarget is the design's target for the time a mutation stays
// UNKNOWN (fencegate_proxy_oldest_unknown_age_seconds under 900).
const UnknownTarget = 15 * time.Minute

// LoadConfig reads a YAML file and fills the defaults. Unknown keys are errors.
func LoadConfig(path string) (Config, error) {
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

// SetDefaults fills every unset field with its default.
func (c *Config) SetDefaults() {
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
	if c.UnmatchedMutations == "" {
		c.UnmatchedMutations = "reject"
	}
	setDur(&c.Backend.Timeout, 30*time.Second)
	setDur(&c.Backend.MaxApplyDelay, DefaultMaxApplyDelay)
	setDur(&c.Backend.DialTimeout, 2*time.Second)
	setDur(&c.Backend.IdleConnTimeout, 90*time.Second)
	if c.Backend.MaxIdleConnsPerHost == 0 {
		c.Backend.MaxIdleConnsPerHost = 64
	}
	if c.Backend.MaxResponseBytes == 0 {
		c.Backend.MaxResponseBytes = DefaultMaxResponseBytes
	}
	for i := range c.Routes {
		r := &c.Routes[i]
		r.Method = asciiUpper(r.Method)
		if r.Mode == "" {
			r.Mode = ModeEnforce
		}
		if r.Status.Mode == "" {
			r.Status.Mode = StatusRegistry
		}
		setDur(&r.Status.MaxAge, DefaultStatusMaxAge)
		setDur(&r.BusyWait, DefaultBusyWait)
		if r.BodyLimit == 0 {
			r.BodyLimit = DefaultBodyLimit
		}
		if r.ResponseStoreLimit == 0 {
			r.ResponseStoreLimit = DefaultResponseStoreLimit
		}
	}
	if c.Identity.Mode == "" {
		c.Identity.Mode = identity.ModeMTLS
	}
	setDur(&c.Trust.ReloadInterval, 5*time.Second)
	setDur(&c.Trust.ClockSkew, DefaultClockSkew)
	if c.Trust.MaxTokenBytes == 0 {
		c.Trust.MaxTokenBytes = DefaultMaxTokenBytes
	}
	if c.Trust.VerifyCacheEntries == nil {
		n := DefaultVerifyCacheEntries
		c.Trust.VerifyCacheEntries = &n
	}
	setDur(&c.Registry.Timeout, 2*time.Second)
	if c.Store.Backend == "" {
		c.Store.Backend = "bolt"
	}
	if c.Store.Path == "" && c.DataDir != "" {
		c.Store.Path = c.DataDir + "/store.db"
	}
	setDur(&c.Store.ClaimTTL, DefaultClaimTTL)
	if c.Store.Identity == "" {
		c.Store.Identity = c.Store.ClaimIdentity
	}
	if c.Admin.Listen == "" {
		c.Admin.Listen = DefaultAdminListen
	}
	setDur(&c.Server.ReadHeaderTimeout, 5*time.Second)
	setDur(&c.Server.ReadTimeout, 30*time.Second)
	setDur(&c.Server.WriteTimeout, c.Backend.Timeout+30*time.Second)
	setDur(&c.Server.IdleTimeout, 120*time.Second)
	if c.Server.MaxHeaderBytes == 0 {
		c.Server.MaxHeaderBytes = 64 << 10
	}
	setDur(&c.Reconcile.Interval, 5*time.Second)
	c.Retention.setDefaults()
	if c.Log.Level == "" {
		c.Log.Level = "info"
	}
}

// validateUpgrades checks the upgrades entries: a chi pattern, and protocol
// names that are tokens, never h2c.
func (c Config) validateUpgrades(add func(string, ...any)) {
	for i, u := range c.Upgrades {
		p := fmt.Sprintf("upgrades[%d]", i)
		if !strings.HasPrefix(u.Path, "/") {
			add("%s.path: %q must start with /", p, u.Path)
		} else if _, err := compileUpgrades([]UpgradeConfig{u}); err != nil {
			add("%s.path: %v", p, err)
		}
		if len(u.Protocols) == 0 {
			add("%s.protocols: at least one protocol (websocket) is required", p)
		}
		for j, proto := range u.Protocols {
			switch {
			case asciiEqualFold(proto, "h2c"):
				add("%s.protocols[%d]: h2c is never allowed (its tunnel would carry unfenced HTTP/2 requests)", p, j)
			case !validToken(proto):
				add("%s.protocols[%d]: %q is not a protocol name", p, j, proto)
			}
		}
	}
}

var templateParam = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// Validate reports every problem of the configuration at once. A duration
// or a limit is never negative (zero means the default, which SetDefaults
// fills in). Validate also makes the extension methods routes name (MOVE,
// PROPPATCH ...) known to the router, so it must run before the Proxy is
// built and before any request is served (New does both).
func (c Config) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	positive := func(name string, d time.Duration) {
		if d <= 0 {
			add("%s: %v must be positive", name, d)
		}
	}
	dur := func(name string, d time.Duration) {
		if d < 0 {
			add("%s: %v must not be negative (0 is the default)", name, d)
		}
	}
	count := func(name string, n int64) {
		if n < 0 {
			add("%s: %d must not be negative (0 is the default)", name, n)
		}
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		add("listen: %q: %v", c.Listen, err)
	}
	if _, _, err := net.SplitHostPort(c.Admin.Listen); err != nil {
		add("admin.listen: %q: %v", c.Admin.Listen, err)
	}
	if _, _, err := net.SplitHostPort(c.Health.Listen); err != nil {
		add("health.listen: %q: %v", c.Health.Listen, err)
	} else if _, port, _ := net.SplitHostPort(c.Health.Listen); port != "0" && (c.Health.Listen == c.Listen || c.Health.Listen == c.Admin.Listen) {
		add("health.listen: %q is also listen or admin.listen; the health listener needs its own address", c.Health.Listen)
	}
	if u, err := url.Parse(c.Backend.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		add("backend.url: %q must be http(s)://host:port", c.Backend.URL)
	}
	positive("backend.timeout", c.Backend.Timeout)
	if c.Backend.Timeout > MaxBackendTimeout {
		add("backend.timeout: %v is above %v (an in-flight mutation must settle within the store's window)", c.Backend.Timeout, MaxBackendTimeout)
	}
	positive("backend.maxApplyDelay", c.Backend.MaxApplyDelay)
	if c.Backend.MaxApplyDelay > MaxApplyDelayLimit {
		add("backend.maxApplyDelay: %v is above %v (a backend that may apply later needs an effect query that closes the operation: effectQueryCloses)", c.Backend.MaxApplyDelay, MaxApplyDelayLimit)
	}
	positive("backend.dialTimeout", c.Backend.DialTimeout)
	dur("backend.idleConnTimeout", c.Backend.IdleConnTimeout)
	count("backend.maxIdleConnsPerHost", int64(c.Backend.MaxIdleConnsPerHost))
	if c.Backend.MaxIdleConnsPerHost > math.MaxInt32 {
		add("backend.maxIdleConnsPerHost: %d is too large", c.Backend.MaxIdleConnsPerHost)
	}
	count("backend.maxConnsPerHost", int64(c.Backend.MaxConnsPerHost))
	count("backend.maxResponseBytes", c.Backend.MaxResponseBytes)
	if c.UnmatchedMutations != "reject" && c.UnmatchedMutations != "pass" {
		add("unmatchedMutations: %q is not reject or pass", c.UnmatchedMutations)
	}
	if len(c.Routes) == 0 {
		add("routes: at least one route is required")
	}
	needRegistry := false
	seen := map[string]bool{}
	for i, r := range c.Routes {
		p := fmt.Sprintf("routes[%d]", i)
		method := asciiUpper(r.Method)
		switch {
		case !validToken(method):
			add("%s.method: %q is not a method token (RFC 9110)", p, r.Method)
		case readMethod(method):
			add("%s.method: %s is a read (GET, HEAD, OPTIONS and TRACE pass through); a route protects any other method", p, method)
		default:
			if err := registerRouteMethod(method); err != nil {
				add("%s.method: %v", p, err)
			}
		}
		if !strings.HasPrefix(r.Path, "/") {
			add("%s.path: %q must start with /", p, r.Path)
		} else if validToken(method) && !readMethod(method) {
			if err := addPattern(chi.NewRouter(), method, r.Path, p+".path"); err != nil {
				add("%v", err)
			}
		}
		key := method + " " + r.Path
		if seen[key] {
			add("%s: %s is configured twice", p, key)
		}
		seen[key] = true
		if r.Resource == "" {
			add("%s.resource: a resource template is required", p)
		}
		pathParams := map[string]bool{}
		for _, name := range patternParams(r.Path) {
			pathParams[name] = true
		}
		for _, m := range templateParam.FindAllStringSubmatch(r.Resource, -1) {
			if !pathParams[m[1]] {
				add("%s.resource: {%s} is not a parameter of path %s", p, m[1], r.Path)
			}
		}
		switch r.Mode {
		case ModeOff, ModeShadow, ModeEnforce:
		default:
			add("%s.mode: %q is not off, shadow or enforce", p, r.Mode)
		}
		switch r.Status.Mode {
		case StatusProof:
		case StatusRegistry:
			needRegistry = true
		default:
			add("%s.status.mode: %q is not proof or registry", p, r.Status.Mode)
		}
		positive(p+".status.maxAge", r.Status.MaxAge)
		dur(p+".busyWait", r.BusyWait)
		count(p+".bodyLimit", r.BodyLimit)
		if r.BodyLimit == math.MaxInt64 {
			add("%s.bodyLimit: %d is too large", p, r.BodyLimit)
		}
		count(p+".responseStoreLimit", int64(r.ResponseStoreLimit))
		for j, st := range r.AnsweredBeforeEffect {
			if st < 500 || st > 599 {
				add("%s.answeredBeforeEffect[%d]: %d is not a 5xx status (500..599): only a 5xx leaves the outcome unknown", p, j, st)
			}
		}
		if r.EffectQuery != "" {
			if u, err := url.Parse(templateParam.ReplaceAllString(r.EffectQuery, "x")); err != nil || u.Host == "" {
				add("%s.effectQuery: %q is not an absolute URL template", p, r.EffectQuery)
			}
		} else if r.EffectQueryCloses {
			add("%s.effectQueryCloses: needs an effectQuery", p)
		}
	}
	errs = append(errs, validateOverlaps(c.Routes)...)
	errs = append(errs, c.Retention.validate()...)
	errs = append(errs, c.Identity.Validate()...)
	errs = append(errs, c.Forwarded.validate()...)
	if c.Identity.Mode == identity.ModeMTLS && c.TLS.ClientCAFile == "" {
		add("identity.mode: mtls needs tls.clientCAFile")
	}
	errs = append(errs, c.TLS.Validate("tls")...)
	if c.Trust.Bundle == "" {
		add("trust.bundle: a JWKS file is required")
	}
	positive("trust.reloadInterval", c.Trust.ReloadInterval)
	if c.Trust.MaxTokenBytes <= 0 {
		add("trust.maxTokenBytes: %d must be positive", c.Trust.MaxTokenBytes)
	}
	dur("trust.clockSkew", c.Trust.ClockSkew)
	if n := c.Trust.VerifyCacheEntries; n != nil && *n < 0 {
		add("trust.verifyCacheEntries: %d must not be negative (0 turns the cache off)", *n)
	}
	dur("registry.timeout", c.Registry.Timeout)
	dur("server.readHeaderTimeout", c.Server.ReadHeaderTimeout)
	dur("server.readTimeout", c.Server.ReadTimeout)
	dur("server.writeTimeout", c.Server.WriteTimeout)
	dur("server.passWriteTimeout", c.Server.PassWriteTimeout)
	dur("server.idleTimeout", c.Server.IdleTimeout)
	count("server.maxHeaderBytes", int64(c.Server.MaxHeaderBytes))
	dur("reconcile.interval", c.Reconcile.Interval)
	c.validateUpgrades(add)
	if needRegistry {
		if u, err := url.Parse(c.Registry.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("registry.url: required (http(s)://host:port) by routes in status mode registry")
		}
	}
	switch c.Store.Backend {
	case "bolt":
		if c.Store.Path == "" {
			add("store.path: required for the bolt store (or set dataDir)")
		}
		if c.Store.Service == "" {
			add("store.service: required for the bolt store: a local store keeps the fences of one replica only, so the sidecar claims the service at the registry and a second replica refuses to start (use store.backend redis for several replicas); the registry also anchors the store's progress under that name")
		}
	case "redis":
		errs = append(errs, c.Store.Redis.Validate("store.redis")...)
		if c.Store.Service == "" {
			add("store.service: required for the redis store: the registry anchors the store's generation, progress and enforcement ledger under that name, so that every sidecar, a new pod included, sees a Redis that lost data")
		}
		if u, err := url.Parse(c.Registry.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("registry.url: required (http(s)://host:port) by the redis store: its outside anchor (generation, progress, ledger) lives in the registry")
		}
	case "memory":
	default:
		add("store.backend: %q is not bolt, redis or memory", c.Store.Backend)
	}
	c.Store.validateClaim(c.Registry.URL, add)
	if c.Store.Service != "" {
		if err := fencegate.ValidateStoreName(c.Store.Service); err != nil {
			add("store.service: %q must be 1 to %d bytes of [A-Za-z0-9._-] (it names the store at the registry)", c.Store.Service, fencegate.MaxStoreNameLen)
		}
	}
	if c.Store.ClaimIdentity != "" && c.Store.Identity != c.Store.ClaimIdentity {
		add("store.identity and store.claimIdentity (its earlier name) differ: set store.identity only")
	}
	if c.DataDir == "" {
		add("dataDir: required (the bolt store lives there by default)")
	}
	if _, err := zapcore.ParseLevel(c.Log.Level); err != nil {
		add("log.level: %v", err)
	}
	return errors.Join(errs...)
}

// patternParams returns the parameter names of a chi pattern, regexp
// parameters ({id:[0-9]+}) included.
func patternParams(pattern string) []string {
	var out []string
	for i := 0; i < len(pattern); i++ {
		if pattern[i] != '{' {
			continue
		}
		end := matchingBrace(pattern, i)
		if end < 0 {
			break
		}
		name, _, _ := strings.Cut(pattern[i+1:end], ":")
		out = append(out, name)
		i = end
	}
	return out
}

// ErrRouteShadowed: a route below enforce can match a path that an
// enforced route of the same method matches too. Which of the two chi
// picks depends on its priorities (a static segment before a regexp
// parameter before a parameter before a catch-all), so the lower mode
// could take paths the enforced route protects. --force-downgrade does not
// override it: the configuration itself is contradictory.
var ErrRouteShadowed = errors.New("proxy: a route below enforce overlaps an enforced route")

// validateOverlaps refuses every route below enforce that can match a path
// an enforced route of the same method can match (overlap.go; when the
// check cannot rule an overlap out, it counts as one).
func validateOverlaps(routes []RouteConfig) []error {
	// A pattern chi refuses is reported as such, not as overlapping.
	valid := func(r RouteConfig) bool {
		m := asciiUpper(r.Method)
		return validToken(m) && !readMethod(m) && strings.HasPrefix(r.Path, "/") && addPattern(chi.NewRouter(), m, r.Path, "") == nil
	}
	var errs []error
	for i, lo := range routes {
		if lo.Mode != ModeOff && lo.Mode != ModeShadow || !valid(lo) {
			continue
		}
		for j, hi := range routes {
			if hi.Mode != ModeEnforce || asciiUpper(hi.Method) != asciiUpper(lo.Method) || !valid(hi) {
				continue
			}
			if o := searchOverlap([]string{hi.Path, lo.Path}, nil); o.Found {
				errs = append(errs, fmt.Errorf("routes[%d]: %w: %s %s in %s can match paths of the enforced routes[%d] %s %s (%s); "+
					"chi could send them to the lower mode. Make it enforce, narrow its pattern (a regexp parameter) so the two cannot match one path, "+
					"or lower the enforced route itself (the enforcement ledger allows that only with --force-downgrade)",
					i, ErrRouteShadowed, asciiUpper(lo.Method), lo.Path, lo.Mode, j, asciiUpper(hi.Method), hi.Path, o))
			}
		}
	}
	return errs
}

// validateClaim reports the problems of a local store's claim on its
// service (store.service, store.claimTTL, registry.url).
func (s StoreConfig) validateClaim(registryURL string, add func(string, ...any)) {
	if !s.Claimed() {
		return
	}
	if s.Service != "" {
		if err := fencegate.ValidateResource(s.ClaimResource()); err != nil || strings.Contains(s.Service, "/") {
			add("store.service: %q must be at most 240 bytes of [A-Za-z0-9-_.:@~], not \".\" or \"..\" (it names the registry resource %q)", s.Service, s.ClaimResource())
		}
	}
	if s.ClaimTTL <= 0 {
		add("store.claimTTL: %v must be positive", s.ClaimTTL)
	}
	if u, err := url.Parse(registryURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		add("registry.url: required (http(s)://host:port) by the %s store: its claim on store.service %q, which keeps a second replica from starting, lives in the registry", s.Backend, s.Service)
	}
}
