package pgfence

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/fencegate/fencegate/authn"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/identity"
)

// The defaults, the sidecar's own (docs/proxy.example.yaml).
const (
	// DefaultProofMaxAge is how old a lockStatus.v1 proof may be.
	DefaultProofMaxAge = 5 * time.Second
	// DefaultClockSkew is how far the registry's clock may be from this
	// process's.
	DefaultClockSkew = time.Second
	// DefaultMaxTokenBytes bounds a grant or a proof before it is parsed.
	DefaultMaxTokenBytes = 8 << 10
	// DefaultRegistryTimeout bounds a registry status read.
	DefaultRegistryTimeout = 2 * time.Second
	// DefaultBodyLimit bounds a request body Handler reads.
	DefaultBodyLimit = 1 << 20
)

// options are New's settings.
type options struct {
	bundle          string
	allowHS256      bool
	rule            authn.Rule
	registry        authn.StatusSource
	registryTimeout time.Duration
	skew            time.Duration
	minEpoch        uint64
	maxTokenBytes   int
	keepReceipts    int
	ident           *identity.Resolver
	bodyLimit       int64
	clk             clock.Clock
	log             *zap.Logger
	reg             prometheus.Registerer
}

func defaults() options {
	return options{
		rule:            authn.Rule{Mode: authn.StatusProof, MaxAge: DefaultProofMaxAge},
		registryTimeout: DefaultRegistryTimeout,
		skew:            DefaultClockSkew,
		maxTokenBytes:   DefaultMaxTokenBytes,
		bodyLimit:       DefaultBodyLimit,
		clk:             clock.Real(),
		log:             zap.NewNop(),
	}
}

// Option configures New.
type Option func(*options)

// WithTrustBundle names the trust bundle file (a JWK set, the sidecar's
// trust.bundle): the keys grants and proofs are verified with, pinned in
// the store on first use as the sidecar pins them. Required.
func WithTrustBundle(path string) Option { return func(o *options) { o.bundle = path } }

// WithHS256 admits HS256 keys in the trust bundle (trust.allowHS256).
func WithHS256() Option { return func(o *options) { o.allowHS256 = true } }

// WithProofStatus establishes that a grant is held from the request's
// lockStatus.v1 proof (Request.Status, the Fence-Status header), no older
// than maxAge (0: DefaultProofMaxAge). The default.
func WithProofStatus(maxAge time.Duration) Option {
	return func(o *options) {
		o.rule = authn.Rule{Mode: authn.StatusProof, MaxAge: maxAge}
		if maxAge <= 0 {
			o.rule.MaxAge = DefaultProofMaxAge
		}
	}
}

// WithRegistryStatus establishes that a grant is held by a linearizable
// read of the registry (the SDK's *client.Client is a StatusSource), each
// bounded by timeout (0: DefaultRegistryTimeout).
func WithRegistryStatus(src authn.StatusSource, timeout time.Duration) Option {
	return func(o *options) {
		// The registry's answer is a proof too, judged by the same age
		// bound (the sidecar's status.maxAge applies in both modes).
		o.rule = authn.Rule{Mode: authn.StatusRegistry, MaxAge: DefaultProofMaxAge}
		o.registry = src
		if timeout > 0 {
			o.registryTimeout = timeout
		}
	}
}

// WithClockSkew is the most the registry's clock may be from this
// process's (trust.clockSkew).
func WithClockSkew(d time.Duration) Option { return func(o *options) { o.skew = d } }

// WithMinIssuerEpoch refuses grants of a lower issuer epoch
// (trust.minIssuerEpoch).
func WithMinIssuerEpoch(e uint64) Option { return func(o *options) { o.minEpoch = e } }

// WithKeepReceipts bounds the receipts a resource keeps
// (retention.maxPerResource): an accepted write past it deletes the
// oldest in the same transaction. 0 (the default) keeps them all.
func WithKeepReceipts(n int) Option { return func(o *options) { o.keepReceipts = n } }

// WithIdentity is how Handler establishes the caller's workload identity
// (mTLS SPIFFE ID, a trusted mesh header). Handler requires it; Apply
// takes the identity in the Request.
func WithIdentity(r *identity.Resolver) Option { return func(o *options) { o.ident = r } }

// WithBodyLimit bounds the request body Handler reads (0:
// DefaultBodyLimit).
func WithBodyLimit(n int64) Option {
	return func(o *options) {
		if n > 0 {
			o.bodyLimit = n
		}
	}
}

// WithClock sets the clock (tests: clocktest).
func WithClock(c clock.Clock) Option { return func(o *options) { o.clk = c } }

// WithLogger sets the logger (default: none).
func WithLogger(l *zap.Logger) Option { return func(o *options) { o.log = l } }

// WithRegisterer registers the metrics (fencegate_pgfence_*) with reg
// (default: a registry of the Fence's own, which nothing scrapes).
func WithRegisterer(reg prometheus.Registerer) Option { return func(o *options) { o.reg = reg } }
