package proxy

import (
	"context"

	"github.com/fencegate/fencegate/authn"
)

// authn.TrustList lists every key of the bundle file as loaded and every pin as
// the store holds it now, with the state the next reload gives each key.
func (p *Proxy) TrustList(ctx context.Context) (authn.TrustList, error) { return p.auth.TrustList(ctx) }

// AcceptTrust pins the key kid of the trust bundle file as it is now (an
// operator's controlled step) and reloads the file, so the key verifies
// from now on (authn.Authenticator.AcceptTrust).
func (p *Proxy) AcceptTrust(ctx context.Context, kid, thumbprint, detail string) (authn.TrustAccepted, error) {
	return p.auth.AcceptTrust(ctx, kid, thumbprint, detail)
}

// authn.VerifyCacheStats reports the verification cache's size and counters.
func (p *Proxy) VerifyCacheStats() authn.VerifyCacheStats { return p.auth.CacheStats() }
