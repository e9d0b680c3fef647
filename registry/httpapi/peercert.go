package httpapi

import (
	"net/http"

	"github.com/fencegate/fencegate"
)

// publicPaths answer without a client certificate when the listener asks
// for one only if given (Options.ClientCertRequired): the probes, the
// metrics and the published trust bundle. None changes state or shows a
// lease.
var publicPaths = map[string]bool{
	"/healthz":               true,
	"/readyz":                true,
	"/metrics":               true,
	"/.well-known/jwks.json": true,
}

// requireClientCert refuses, with IDENTITY_REQUIRED, every request but
// those of publicPaths that did not present a client certificate verified
// against the listener's client CA. It runs before routing, so every route
// (every /v1 route, /debug, and any route added later) needs one: what the
// TLS handshake required before the listener served the probes without a
// certificate. The identity itself is still established by each handler
// (identity.Resolver). A server without Options.ClientCertRequired lets
// every request through.
func requireClientCert(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		s := serverOf(req)
		if !s.ClientCertRequired {
			next.ServeHTTP(w, req)
			return
		}
		public := publicPaths[req.URL.Path] && req.URL.RawPath == ""
		if public || (req.TLS != nil && len(req.TLS.VerifiedChains) > 0) {
			next.ServeHTTP(w, req)
			return
		}
		s.fail(w, req, fencegate.NewProblem(fencegate.CodeIdentityRequired,
			"a client certificate is required: only /healthz, /readyz, /metrics and /.well-known/jwks.json answer without one"), 0)
	})
}
