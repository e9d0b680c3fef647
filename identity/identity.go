package identity

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// Modes.
const (
	ModeMTLS           = "mtls"
	ModeHeader         = "header"
	ModeInsecureHeader = "insecure-header"
)

// DefaultHeader is the identity header of the header modes.
const DefaultHeader = "X-Fencegate-Identity"

// XFCC is Envoy's forwarded client certificate header; when it is the
// configured header, the single URI field of its last element is the
// identity, and a header that is malformed or ambiguous by Envoy's grammar
// (see xfcc.go) establishes none.
const XFCC = "X-Forwarded-Client-Cert"

var (
	// ErrNoIdentity: the request carries no usable identity.
	ErrNoIdentity = errors.New("identity: no caller identity")
	// ErrUntrusted: the identity header came from an address that is not a trusted proxy.
	ErrUntrusted = errors.New("identity: identity header from an untrusted address")
)

// Config selects how identities are established.
type Config struct {
	Mode string `yaml:"mode" json:"mode"`
	// Header names the identity header (header modes).
	Header string `yaml:"header" json:"header"`
	// TrustedProxies are the CIDRs whose identity header is believed (header mode).
	TrustedProxies []string `yaml:"trustedProxies" json:"trustedProxies"`
	// TrustDomain, when set, requires SPIFFE IDs of this trust domain, in
	// every mode: in mtls mode the certificate's SPIFFE ID, in the header
	// modes the header's identity (the URI of the last XFCC element, or the
	// plain header value), which must then be a canonical spiffe://<domain>/…
	// ID; any other identity, a plain name included, is rejected.
	TrustDomain string `yaml:"trustDomain" json:"trustDomain"`
}

// Validate reports every problem of the configuration.
func (c Config) Validate() []error {
	var errs []error
	switch c.Mode {
	case ModeMTLS:
	case ModeHeader:
		if len(c.TrustedProxies) == 0 {
			errs = append(errs, fmt.Errorf("identity.trustedProxies: header mode needs the proxy CIDRs whose header is trusted"))
		}
	case ModeInsecureHeader:
	default:
		errs = append(errs, fmt.Errorf("identity.mode: %q is not one of mtls, header, insecure-header", c.Mode))
	}
	for _, p := range c.TrustedProxies {
		if _, err := netip.ParsePrefix(p); err != nil {
			errs = append(errs, fmt.Errorf("identity.trustedProxies: %q: %v", p, err))
		}
	}
	if c.Header != "" && http.CanonicalHeaderKey(c.Header) == "" {
		errs = append(errs, fmt.Errorf("identity.header: %q is not a header name", c.Header))
	}
	return errs
}

// Resolver finds the caller identity of a request.
type Resolver struct {
	cfg     Config
	header  string
	proxies []netip.Prefix
}

// New builds a Resolver from a valid Config.
func New(c Config) (*Resolver, error) {
	if errs := c.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("identity: %w", errors.Join(errs...))
	}
	r := &Resolver{cfg: c, header: c.Header}
	if r.header == "" {
		r.header = DefaultHeader
	}
	for _, p := range c.TrustedProxies {
		r.proxies = append(r.proxies, netip.MustParsePrefix(p))
	}
	return r, nil
}

// Insecure reports whether the mode trusts anyone's header.
func (r *Resolver) Insecure() bool { return r.cfg.Mode == ModeInsecureHeader }

// Header is the identity header name (header modes).
func (r *Resolver) Header() string { return r.header }

// Mode is the configured mode.
func (r *Resolver) Mode() string { return r.cfg.Mode }

// Identify returns the caller's identity.
func (r *Resolver) Identify(req *http.Request) (string, error) {
	switch r.cfg.Mode {
	case ModeMTLS:
		return r.fromCert(req)
	case ModeHeader:
		if !r.trustedPeer(req.RemoteAddr) {
			return "", ErrUntrusted
		}
	}
	return r.fromHeader(req)
}

func (r *Resolver) trustedPeer(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	ip = ip.Unmap()
	for _, p := range r.proxies {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

func (r *Resolver) fromHeader(req *http.Request) (string, error) {
	vals := req.Header.Values(r.header)
	if len(vals) != 1 || strings.TrimSpace(vals[0]) == "" {
		return "", fmt.Errorf("%w: want exactly one %s header", ErrNoIdentity, r.header)
	}
	id := strings.TrimSpace(vals[0])
	if http.CanonicalHeaderKey(r.header) == XFCC {
		var err error
		if id, err = uriFromXFCC(vals[0]); err != nil {
			return "", err
		}
	}
	if r.cfg.TrustDomain != "" {
		if err := r.headerSPIFFE(id); err != nil {
			return "", err
		}
	}
	return id, nil
}

// headerSPIFFE checks that an identity from a header is a SPIFFE ID of the
// configured trust domain written as the SPIFFE standard requires
// (spiffe://<trust domain> then "/"-separated segments of letters, digits,
// ".", "-" and "_", none empty, "." or ".."; no port, user, query, fragment
// or percent-encoding), so the string compared to grant owners has exactly
// one spelling.
func (r *Resolver) headerSPIFFE(raw string) error {
	path, ok := strings.CutPrefix(raw, "spiffe://"+r.cfg.TrustDomain)
	if !ok || (path != "" && path[0] != '/') {
		return fmt.Errorf("%w: %s identity is not a SPIFFE ID of trust domain %s", ErrNoIdentity, r.header, r.cfg.TrustDomain)
	}
	if path == "" {
		return nil
	}
	for _, seg := range strings.Split(path[1:], "/") {
		if seg == "" || seg == "." || seg == ".." || strings.TrimLeft(seg, spiffeSegmentChars) != "" {
			return fmt.Errorf("%w: %s identity is not a well-formed SPIFFE ID", ErrNoIdentity, r.header)
		}
	}
	return nil
}

const spiffeSegmentChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_"

func (r *Resolver) fromCert(req *http.Request) (string, error) {
	if req.TLS == nil || len(req.TLS.VerifiedChains) == 0 || len(req.TLS.PeerCertificates) == 0 {
		return "", fmt.Errorf("%w: no verified client certificate", ErrNoIdentity)
	}
	var ids []*url.URL
	for _, u := range req.TLS.PeerCertificates[0].URIs {
		if u.Scheme == "spiffe" {
			ids = append(ids, u)
		}
	}
	if len(ids) != 1 {
		return "", fmt.Errorf("%w: client certificate has %d SPIFFE IDs, want 1", ErrNoIdentity, len(ids))
	}
	id := ids[0]
	if id.Host == "" || id.User != nil || id.RawQuery != "" || id.Fragment != "" {
		return "", fmt.Errorf("%w: malformed SPIFFE ID", ErrNoIdentity)
	}
	if r.cfg.TrustDomain != "" && id.Host != r.cfg.TrustDomain {
		return "", fmt.Errorf("%w: SPIFFE ID outside trust domain %s", ErrNoIdentity, r.cfg.TrustDomain)
	}
	return id.String(), nil
}
