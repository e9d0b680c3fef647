package authn

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/verify"
)

// Config is what authentication takes of the sidecar's configuration
// (proxy builds it from its trust, registry and route settings).
type Config struct {
	// Bundle is the trust bundle file's path (trust.bundle); AllowHS256
	// admits HS256 keys in it.
	Bundle     string
	AllowHS256 bool
	// ClockSkew is trust.clockSkew: the registry's clock is within it of
	// the true time.
	ClockSkew time.Duration
	// MaxTokenBytes bounds a grant or proof before it is parsed.
	MaxTokenBytes int
	// MinIssuerEpoch is trust.minIssuerEpoch.
	MinIssuerEpoch uint64
	// VerifyCacheEntries bounds the verification cache (<= 0 disables it;
	// nil: DefaultVerifyCacheEntries).
	VerifyCacheEntries *int
	// RegistryTimeout bounds a registry status read.
	RegistryTimeout time.Duration
	// MaxProofAge is the longest status.maxAge of any route: how long an
	// ended grant's older proof could still pass (ended.go).
	MaxProofAge time.Duration
}

// Deps are an Authenticator's dependencies. Store, Identity, Clock, Log,
// Metrics and Registerer are required.
type Deps struct {
	// Store holds the trust pins.
	Store store.Store
	// Status reads grant status from the registry (routes in registry
	// status mode); nil: none configured.
	Status StatusSource
	// FirstUse says whether a store with no pins may pin the bundle file
	// as it is (nil: allowed).
	FirstUse FirstUseCheck
	// TimeBound is the lower bound on the time learned from the registry
	// (nil: one of its own, taught by the proofs it verifies).
	TimeBound *TimeBound
	// Identity establishes the caller's workload identity.
	Identity *identity.Resolver
	Clock    clock.Clock
	Log      *zap.Logger
	// Metrics are the sidecar's collectors authentication updates;
	// Registerer takes the ones it owns (trust keys and events, the
	// verification cache).
	Metrics    Metrics
	Registerer prometheus.Registerer
}

// Metrics are the sidecar's collectors (registered by proxy) that
// authentication updates.
type Metrics struct {
	// Verify is fencegate_proxy_verify_seconds.
	Verify prometheus.Histogram
	// Status is fencegate_proxy_status_seconds, by status mode.
	Status *prometheus.HistogramVec
	// ClockBehind is fencegate_proxy_clock_behind_seconds.
	ClockBehind prometheus.Gauge
	// TrustReloads is fencegate_proxy_trust_reloads_total, by result.
	TrustReloads *prometheus.CounterVec
}

// StatusMode is how a route establishes that a grant is currently held.
type StatusMode string

// The status modes, as routes' status.mode spells them.
const (
	StatusProof    StatusMode = "proof"    // a fresh lockStatus.v1 in Fence-Status
	StatusRegistry StatusMode = "registry" // a linearizable registry read
)

// Rule is a route's status rule.
type Rule struct {
	Mode StatusMode
	// MaxAge is how old a proof may be (proof mode).
	MaxAge time.Duration
}

// Refusal is why a write's grant is not accepted: the contract's code and
// a detail; Retryable marks a refusal the client may retry as it is (an
// unreachable registry, a store that lost its pins).
type Refusal struct {
	Code      fencegate.Code
	Detail    string
	Retryable bool
}

// Error implements error.
func (r *Refusal) Error() string { return string(r.Code) + ": " + r.Detail }

func refuse(code fencegate.Code, detail string) *Refusal {
	return &Refusal{Code: code, Detail: detail}
}

// fromVerify maps a verify error to its refusal.
func fromVerify(err error) *Refusal {
	var ve *verify.Error
	if errors.As(err, &ve) {
		return refuse(ve.Code, err.Error())
	}
	return refuse(fencegate.CodeGrantInvalid, err.Error())
}

// Result is what Check established, as far as it got: the caller's
// identity, then the verified grant and its digest.
type Result struct {
	Caller string
	Grant  *fencegate.Grant
	Digest string
}

// Authenticator authenticates protected writes: the caller's identity,
// the grant's signature with the trusted keys (trust.go), its binding to
// the resource and the caller, and its current status (status.go).
type Authenticator struct {
	trust  *trust
	status *statusChecker
	ident  *identity.Resolver
	clk    clock.Clock
	m      Metrics
	opts   []verify.Option
}

// New loads the trust bundle file and the pins (pinning on first use when
// the store has none and first use is allowed) and registers the trust and
// verification-cache collectors. It starts nothing: Run watches the file.
func New(ctx context.Context, c Config, d Deps) (*Authenticator, error) {
	opts := []verify.Option{verify.WithMaxTokenBytes(c.MaxTokenBytes)}
	t, err := newTrust(ctx, trustDeps{path: c.Bundle, allowHS: c.AllowHS256, skew: c.ClockSkew,
		store: d.Store, firstUse: d.FirstUse, clk: d.Clock, log: d.Log, reloads: d.Metrics.TrustReloads, reg: d.Registerer})
	if err != nil {
		return nil, err
	}
	if n := c.VerifyCacheEntries; n != nil {
		t.setCacheEntries(*n)
	}
	if err := d.Registerer.Register(t.collector()); err != nil {
		return nil, fmt.Errorf("authn: metrics: %w", err)
	}
	s := &statusChecker{src: d.Status, timeout: c.RegistryTimeout, skew: c.ClockSkew,
		minEpoch: c.MinIssuerEpoch, opts: opts, m: d.Metrics,
		ended: newEndedGrants(c.MaxProofAge+c.ClockSkew, defaultEndedLimit), learned: d.TimeBound}
	if s.learned == nil {
		s.learned = NewTimeBound(d.Clock, c.ClockSkew)
	}
	return &Authenticator{trust: t, status: s, ident: d.Identity, clk: d.Clock, m: d.Metrics, opts: opts}, nil
}

// Identify is the caller's workload identity (mTLS SPIFFE ID or a trusted
// mesh header).
func (au *Authenticator) Identify(req *http.Request) (string, error) { return au.ident.Identify(req) }

// Check authenticates a protected write of resource: the caller's
// identity, the grant token's signature and claims with the trusted keys
// (through the verification cache), its binding to resource and the
// caller, and its status by rule (proof, the Fence-Status value; or the
// registry). One trust bundle verifies the grant and its proof. It changes
// nothing but what it learns (the time, the newest issuer epoch, ended
// grants, the keys in use); the Result holds what it established before
// any refusal.
func (au *Authenticator) Check(req *http.Request, resource string, token, proof []byte, rule Rule) (Result, *Refusal) {
	caller, err := au.ident.Identify(req)
	if err != nil {
		return Result{}, refuse(fencegate.CodeIdentityRequired, err.Error())
	}
	return au.CheckCaller(req.Context(), caller, resource, token, proof, rule)
}

// CheckCaller is Check for a caller whose workload identity the service
// established itself (library mode: package pgfence's Apply); "" is
// IDENTITY_REQUIRED.
func (au *Authenticator) CheckCaller(ctx context.Context, caller, resource string, token, proof []byte, rule Rule) (Result, *Refusal) {
	r := Result{Caller: caller}
	if caller == "" {
		return Result{}, refuse(fencegate.CodeIdentityRequired, "the caller's workload identity is required")
	}

	start := au.clk.Now()
	// Only what depends on the token's bytes and the bundle is cached;
	// binding, epoch and status below run on every request.
	view := au.trust.view()
	if view.bundle == nil && view.unpinnedStore {
		// No key is trusted because the store lost its pins with its
		// data: the cause is the store, and so is the answer.
		return r, &Refusal{Code: fencegate.CodeStoreUnavailable, Retryable: true,
			Detail: "no key is trusted: the fenced store holds no trust pins and is not known to be its own data set (it may have lost its data, and its pins with it); writes are refused until the loss is acknowledged at the registry, or an operator accepts keys (fencegate trust accept)"}
	}
	g, digest, kid, err := view.grant(token, au.opts)
	au.m.Verify.Observe(clock.Since(au.clk, start).Seconds())
	if err != nil {
		return r, fromVerify(err)
	}
	r.Grant, r.Digest = g, digest
	if err := verify.CheckBinding(g, resource, caller); err != nil {
		return r, fromVerify(err)
	}
	if ref := au.status.check(ctx, rule, view, g, digest, proof, au.clk); ref != nil {
		return r, ref
	}
	au.trust.noteUse(ctx, kid, time.Duration(g.TTLMs)*time.Millisecond)
	return r, nil
}

// MinIssuerEpoch is the lowest issuer epoch of a grant accepted now: the
// configured minimum, or the highest issuer epoch a verified status proof
// carried since the start, whichever is higher.
func (au *Authenticator) MinIssuerEpoch() uint64 {
	return max(au.status.minEpoch, au.status.maxSeen.Load())
}

// Reload re-reads the trust bundle file and the pins now (first use, a
// signed bundle's keys, removals). It reports whether the file or the keys
// verified with changed; a reload that drops a key behind grants still
// held fails with ErrKeyInUse unless force is set.
func (au *Authenticator) Reload(ctx context.Context, force bool) (bool, error) {
	return au.trust.reload(ctx, force)
}

// Poll is one tick of the trust watch loop: the pins are read again, and
// the bundle file is applied when it is not the one loaded.
func (au *Authenticator) Poll(ctx context.Context) { au.trust.poll(ctx) }

// Run polls the trust bundle file and the pins every interval until ctx
// ends.
func (au *Authenticator) Run(ctx context.Context, interval time.Duration) {
	au.trust.watch(ctx, interval)
}

// KeyIDs are the key IDs verified with: the bundle file's keys that are
// pinned.
func (au *Authenticator) KeyIDs() []string { return au.trust.keyIDs() }

// CacheStats reports the verification cache's size and counters.
func (au *Authenticator) CacheStats() VerifyCacheStats { return au.trust.cacheStats() }
