package proxy

import (
	"github.com/fencegate/fencegate/authn"
	"github.com/fencegate/fencegate/proxy/inbound"
	"slices"
	"time"

	"github.com/fencegate/fencegate/identity"
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

// Config is the pipeline's own settings: the sections of the sidecar's
// configuration file that the request path reads. The file itself (its
// schema, loading, defaults and validation, the listeners, the store
// choice, the admin token, the log level) is proxy/server.Config, which
// hands its Pipeline() to New. Error messages name the file's keys.
type Config struct {
	// Backend is the legacy service, typically http://127.0.0.1:PORT.
	Backend BackendConfig
	Routes  []RouteConfig
	// UnmatchedMutations decides what happens to a mutating request that
	// matches no route: reject (default) or pass. Only GET, HEAD, OPTIONS
	// and TRACE, spelled exactly so, are reads; every other method is a
	// mutation. Even with pass, a mutation whose method differs only in
	// case from a route's, on a path that route matches ("put" for PUT),
	// is treated as that route's and refused (ROUTE_NOT_PROTECTED), and so
	// is one whose path a lenient backend reads as an enforced route's
	// (lenient.go), or whose decoded path holds NUL, a control character or
	// invalid UTF-8.
	UnmatchedMutations string
	Identity           identity.Config
	Trust              TrustConfig
	// StatusTimeout bounds a status read at the registry (routes in status
	// mode registry): registry.timeout in the file. Default
	// DefaultStatusTimeout.
	StatusTimeout time.Duration
	Reconcile     ReconcileConfig
	// Retention bounds the receipts and quarantine entries the store keeps.
	Retention RetentionConfig

	// Upgrades lists the only protocol upgrades let through (a GET on the
	// path asking for listed protocols). Any other request asking for an
	// upgrade is refused (UPGRADE_REFUSED); h2c always is. What flows in
	// an allowed tunnel is NOT fenced.
	Upgrades []UpgradeConfig

	// Forwarded says whose X-Forwarded-* and Forwarded headers are kept
	// (forwarded.go).
	Forwarded ForwardedConfig

	// PassWriteTimeout bounds writing a pass-through's answer (reads,
	// unmatched mutations passed, routes in mode off, shadow passes) from
	// the start of the pass-through, instead of the inbound server's write
	// timeout, which bounds the answers of protected writes and refusals:
	// server.passWriteTimeout in the file. 0 (default): none, a read
	// streams as long as the backend does.
	PassWriteTimeout time.Duration
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

// ReconcileConfig drives automatic reconciliation through effect queries.
type ReconcileConfig struct {
	Interval time.Duration `yaml:"interval"`
}

// Defaults.
const (
	DefaultBodyLimit          = 1 << 20
	DefaultResponseStoreLimit = 64 << 10
	DefaultMaxResponseBytes   = 4 << 20
	DefaultStatusMaxAge       = 5 * time.Second
	DefaultBusyWait           = 2 * time.Second
	DefaultMaxTokenBytes      = 8 << 10
	DefaultStatusTimeout      = 2 * time.Second
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

func setDur(d *time.Duration, v time.Duration) {
	if *d == 0 {
		*d = v
	}
}

// SetDefaults fills every unset field with its default.
func (c *Config) SetDefaults() {
	if c.UnmatchedMutations == "" {
		c.UnmatchedMutations = "reject"
	}
	c.Backend.setDefaults()
	for i := range c.Routes {
		c.Routes[i].setDefaults()
	}
	if c.Identity.Mode == "" {
		c.Identity.Mode = identity.ModeMTLS
	}
	c.Trust.setDefaults()
	setDur(&c.StatusTimeout, DefaultStatusTimeout)
	setDur(&c.Reconcile.Interval, 5*time.Second)
	c.Retention.setDefaults()
}

func (b *BackendConfig) setDefaults() {
	setDur(&b.Timeout, 30*time.Second)
	setDur(&b.MaxApplyDelay, DefaultMaxApplyDelay)
	setDur(&b.DialTimeout, 2*time.Second)
	setDur(&b.IdleConnTimeout, 90*time.Second)
	if b.MaxIdleConnsPerHost == 0 {
		b.MaxIdleConnsPerHost = 64
	}
	if b.MaxResponseBytes == 0 {
		b.MaxResponseBytes = DefaultMaxResponseBytes
	}
}

func (r *RouteConfig) setDefaults() {
	r.Method = inbound.ASCIIUpper(r.Method)
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

func (t *TrustConfig) setDefaults() {
	setDur(&t.ReloadInterval, 5*time.Second)
	setDur(&t.ClockSkew, DefaultClockSkew)
	if t.MaxTokenBytes == 0 {
		t.MaxTokenBytes = DefaultMaxTokenBytes
	}
	if t.VerifyCacheEntries == nil {
		n := authn.DefaultVerifyCacheEntries
		t.VerifyCacheEntries = &n
	}
}
