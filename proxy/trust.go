package proxy

import (
	"context"

	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/proxy/authn"
)

// The sidecar's trust and status surface, kept under the names its users
// (proxy/server, proxy/adminapi, cmd/fencegate, sim) know; the
// implementation is authentication's (proxy/authn).

// StatusSource reads a grant's current status proof from the registry in
// one linearizable read (authn.StatusSource).
type StatusSource = authn.StatusSource

// FirstUseCheck answers whether a fenced store with no trust pins may pin
// the trust bundle file as it is (Options.FirstUseAllowed).
type FirstUseCheck = authn.FirstUseCheck

// TimeBound is the lower bound on the current time learned from the
// registry (authn.TimeBound).
type TimeBound = authn.TimeBound

// NewTimeBound is a bound with no reading yet, on the sidecar's clock clk
// (nil: the real one), for a registry within skew of the true time.
func NewTimeBound(clk clock.Clock, skew time.Duration) *TimeBound {
	return authn.NewTimeBound(clk, skew)
}

// The trust list and the operator's acceptance (authn, trust_operator.go).
type (
	TrustKey        = authn.TrustKey
	TrustBundleInfo = authn.TrustBundleInfo
	TrustList       = authn.TrustList
	TrustAccepted   = authn.TrustAccepted
	// VerifyCacheStats are the verification cache's counters.
	VerifyCacheStats = authn.VerifyCacheStats
)

// Key states, as the admin API lists them.
const (
	KeyTrusted     = authn.KeyTrusted
	KeyUnpinned    = authn.KeyUnpinned
	KeyConflict    = authn.KeyConflict
	KeyNotInBundle = authn.KeyNotInBundle
)

// DefaultVerifyCacheEntries is the default bound of the verification
// cache; MaxTrustBundleBytes bounds the trust bundle file.
const (
	DefaultVerifyCacheEntries = authn.DefaultVerifyCacheEntries
	MaxTrustBundleBytes       = authn.MaxTrustBundleBytes
)

// The trust operations' sentinel errors (authn's).
var (
	// ErrKeyInUse: a trust-bundle reload would drop a key behind grants
	// still held; it is refused unless forced.
	ErrKeyInUse = authn.ErrKeyInUse
	// ErrTrustKeyNotInBundle: trust accept named a kid that is not in the
	// trust bundle file now.
	ErrTrustKeyNotInBundle = authn.ErrTrustKeyNotInBundle
	// ErrTrustThumbprint: trust accept named a thumbprint that is not the
	// one of the bundle file's key.
	ErrTrustThumbprint = authn.ErrTrustThumbprint
)

// TrustList lists every key of the bundle file as loaded and every pin as
// the store holds it now, with the state the next reload gives each key.
func (p *Proxy) TrustList(ctx context.Context) (TrustList, error) { return p.auth.TrustList(ctx) }

// AcceptTrust pins the key kid of the trust bundle file as it is now (an
// operator's controlled step) and reloads the file, so the key verifies
// from now on (authn.Authenticator.AcceptTrust).
func (p *Proxy) AcceptTrust(ctx context.Context, kid, thumbprint, detail string) (TrustAccepted, error) {
	return p.auth.AcceptTrust(ctx, kid, thumbprint, detail)
}

// VerifyCacheStats reports the verification cache's size and counters.
func (p *Proxy) VerifyCacheStats() VerifyCacheStats { return p.auth.CacheStats() }
