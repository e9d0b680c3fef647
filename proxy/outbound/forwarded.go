package outbound

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// The forwarding headers: one rule (forwardedRule.apply) sets them on
// every request the sidecar forwards, read or write (proxy.ForwardedConfig
// says whose it believes):
//
//   - from a peer inside the trusted proxies (a TLS-terminating ingress, a
//     mesh proxy): X-Forwarded-Proto, X-Forwarded-Host and Forwarded reach
//     the backend as that peer sent them (X-Forwarded-Proto and -Host are
//     set from the sidecar's own view when the peer sent none), and the
//     peer's address is appended to its X-Forwarded-For ("client, peer");
//   - from any other peer: X-Forwarded-For is the peer's address alone,
//     X-Forwarded-Proto is "https" when the sidecar's own listener is TLS
//     and "http" otherwise, X-Forwarded-Host is the request's Host (absent
//     when the request has none), and Forwarded is removed: nothing the
//     peer says about the client can be believed.

// forwardedRule is the compiled list of trusted proxies.
type forwardedRule struct {
	trusted []netip.Prefix
}

// newForwardedRule compiles the trusted proxies' CIDRs.
func newForwardedRule(trustedProxies []string) (forwardedRule, error) {
	var r forwardedRule
	for _, s := range trustedProxies {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return r, fmt.Errorf("outbound: forwarded.trustedProxies: %q: %w", s, err)
		}
		r.trusted = append(r.trusted, p)
	}
	return r, nil
}

// peerTrusted reports whether host (a RemoteAddr's address) is a trusted proxy.
func (r forwardedRule) peerTrusted(host string) bool {
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	ip = ip.Unmap()
	for _, p := range r.trusted {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// apply sets out's forwarding headers for the inbound request in by the
// rule above. It reads the inbound values from in.Header, so
// out may already have lost them (httputil.ReverseProxy strips them before
// Rewrite).
func (r forwardedRule) apply(out http.Header, in *http.Request) {
	host, _, err := net.SplitHostPort(in.RemoteAddr)
	if err != nil {
		host = ""
	}
	if host != "" && r.peerTrusted(host) {
		xff := host
		if prior := in.Header.Values("X-Forwarded-For"); len(prior) > 0 {
			xff = strings.Join(prior, ", ") + ", " + host
		}
		out.Set("X-Forwarded-For", xff)
		for _, h := range []string{"X-Forwarded-Proto", "X-Forwarded-Host", "Forwarded"} {
			out.Del(h)
			if vs := in.Header.Values(h); len(vs) > 0 {
				out[h] = append([]string(nil), vs...)
			}
		}
		if len(out.Values("X-Forwarded-Proto")) == 0 {
			out.Set("X-Forwarded-Proto", ownProto(in))
		}
		if len(out.Values("X-Forwarded-Host")) == 0 && in.Host != "" {
			out.Set("X-Forwarded-Host", in.Host)
		}
		return
	}
	if host != "" {
		out.Set("X-Forwarded-For", host)
	} else {
		out.Del("X-Forwarded-For")
	}
	out.Set("X-Forwarded-Proto", ownProto(in))
	if in.Host != "" {
		out.Set("X-Forwarded-Host", in.Host)
	} else {
		out.Del("X-Forwarded-Host")
	}
	out.Del("Forwarded")
}

// ownProto is the scheme the sidecar itself was reached by.
func ownProto(in *http.Request) string {
	if in.TLS != nil {
		return "https"
	}
	return "http"
}
