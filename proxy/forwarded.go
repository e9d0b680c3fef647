package proxy

import (
	"fmt"
	"net/netip"
)

// ForwardedConfig says whose forwarding headers the sidecar believes.
//
// One rule (proxy/outbound, forwarded.go) sets them on every request it
// forwards, read or write:
//
//   - from a peer inside TrustedProxies (a TLS-terminating ingress, a mesh
//     proxy): X-Forwarded-Proto, X-Forwarded-Host and Forwarded reach the
//     backend as that peer sent them (X-Forwarded-Proto and -Host are set
//     from the sidecar's own view when the peer sent none), and the peer's
//     address is appended to its X-Forwarded-For ("client, peer");
//   - from any other peer: X-Forwarded-For is the peer's address alone,
//     X-Forwarded-Proto is "https" when the sidecar's own listener is TLS
//     and "http" otherwise, X-Forwarded-Host is the request's Host (absent
//     when the request has none), and Forwarded is removed: nothing the
//     peer says about the client can be believed.
type ForwardedConfig struct {
	// TrustedProxies are the CIDRs (10.0.0.0/8, 127.0.0.1/32) of the
	// proxies in front of the sidecar whose forwarding headers are kept.
	// Empty (the default): nobody's.
	TrustedProxies []string `yaml:"trustedProxies"`
}

// validate reports every CIDR that does not parse.
func (c ForwardedConfig) validate() []error {
	var errs []error
	for i, p := range c.TrustedProxies {
		if _, err := netip.ParsePrefix(p); err != nil {
			errs = append(errs, fmt.Errorf("forwarded.trustedProxies[%d]: %q: %v", i, p, err))
		}
	}
	return errs
}
