package outbound

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/fencegate/fencegate/proxy/inbound"
)

// What the backend receives. Both paths, the pass-through (p.pass: reads,
// unmatched mutations passed, routes in mode off, shadow passes) and a
// protected write (send), build the request by the same functions:
//
//   - the method as sent, and the request target as the client sent it,
//     byte for byte: the raw path (escapes such as %2F, %20 or %7e left as
//     they are) and the raw query (';', repeated or empty parameters,
//     malformed '%' escapes, a bare '?'), behind the backend URL's path, if
//     it has one. A target in absolute form ("http://host/p") is sent in
//     origin form ("/p"), as is a path starting with "//" (re-escaped by Go
//     where it must be);
//   - Host as the client sent it;
//   - every header the client sent, but: the hop-by-hop fields (Connection
//     and the fields it names, Proxy-Connection, Keep-Alive,
//     Proxy-Authenticate, Proxy-Authorization, TE, Trailer,
//     Transfer-Encoding, Upgrade; an allowed upgrade keeps Connection:
//     Upgrade and its Upgrade, and a read keeps "TE: trailers"); every
//     field whose name folds to Fence-* (Fence_Token, fence.resource, ...:
//     the sidecar owns that namespace in every spelling a gateway could
//     read as its own, namespace.go; a client cannot speak for it, nor
//     hand a message header such as Fence-Lease on); and the forwarding
//     headers, which ForwardedConfig's rule sets;
//   - no User-Agent when the client sent none, and no Accept-Encoding
//     added (the default transport has compression disabled);
//   - HTTP/1.1 whatever the client spoke; a request without Host (HTTP/1.0)
//     gets the backend's address as Host; header names in canonical case,
//     but Idempotency-Key and X-Idempotency-Key in lowercase on a mutation
//     without a body (sendonce.go: so that Go's transport never sends it
//     twice); no request trailers, nor a Trailer header announcing them;
//     Content-Length: 0 on an empty POST, PUT or PATCH and never on an
//     empty request of another method (Go's client), whatever the client sent;
//   - every mutation sent once: never resent by the transport after any
//     byte of it was written (sendonce.go);
//   - on a read, the body streamed as it came (chunked stays chunked) and
//     Expect: 100-continue kept (the backend's 100 Continue is relayed);
//   - on a protected write only: the fence headers the sidecar sets
//     (Fence-Token, Fence-Resource, Fence-Operation-Root, Fence-Segment,
//     Fence-Operation-Id, and Idempotency-Key on an idempotencyKey route,
//     replacing every spelling of it the client sent); no Expect (the
//     sidecar has the whole body, and has already told the client to send
//     it); no TE (a write's answer is buffered: trailers are not relayed);
//     the body with a Content-Length (a chunked body is de-chunked).
//
// What the client receives: the backend's status, headers and body, less
// the hop-by-hop fields (and those the backend's Connection names), with
// no Content-Type guessed when the backend sent none; the answer to a
// mutation (protected, replayed or passed) also loses the backend's
// fields in the sidecar's namespace (namespace.go). A read's answer
// streams as it comes, with its 1xx and trailers. A protected write's
// answer adds Fence-Receipt, has a Content-Length when it fitted
// backend.maxResponseBytes (else it streams on, chunked), and carries no
// 1xx and no trailers (a replay from the receipt could not give them).

// Target is the backend and the rules of what it receives of a client's
// request (above), shared by the pass-through and a protected write.
type Target struct {
	backend *url.URL
	fwd     forwardedRule
}

// NewTarget is the backend at backend, with the forwarding headers of the
// peers in trustedProxies (CIDRs) kept (ForwardedConfig's rule,
// forwarded.go).
func NewTarget(backend *url.URL, trustedProxies []string) (*Target, error) {
	fwd, err := newForwardedRule(trustedProxies)
	if err != nil {
		return nil, err
	}
	return &Target{backend: backend, fwd: fwd}, nil
}

// String is the backend's URL.
func (t *Target) String() string { return t.backend.String() }

// URL is the backend URL for the inbound request in: the backend's
// scheme and host, its path (if any) followed by in's target as the client
// sent it.
func (t *Target) URL(in *http.Request) *url.URL {
	prefix := strings.TrimSuffix(t.backend.EscapedPath(), "/")
	u := &url.URL{Scheme: t.backend.Scheme, Host: t.backend.Host, RawQuery: in.URL.RawQuery, ForceQuery: in.URL.ForceQuery}
	raw := clientPath(in)
	switch {
	case raw == "*" && prefix == "":
		// OPTIONS * stays asterisk-form.
		u.Opaque = raw
	case strings.HasPrefix(raw, "/") && !strings.HasPrefix(prefix+raw, "//"):
		// Opaque is sent as it is: no re-escaping of what the client sent.
		u.Opaque = prefix + raw
	default:
		// Opaque starting with "//" would be sent in absolute form
		// (url.URL.RequestURI): use the parsed path, re-escaped only
		// where Go must (RawPath is kept when it is a valid encoding).
		u.Path = strings.TrimSuffix(t.backend.Path, "/") + "/" + strings.TrimPrefix(in.URL.Path, "/")
		u.RawPath = prefix + "/" + strings.TrimPrefix(in.URL.EscapedPath(), "/")
	}
	if q := t.backend.RawQuery; q != "" {
		if u.RawQuery == "" {
			u.RawQuery = q
		} else {
			u.RawQuery = q + "&" + u.RawQuery
		}
	}
	return u
}

// clientPath is the path of in's request target as the client sent it:
// the raw target up to its '?' when it is in origin form and decodes to
// the path the sidecar matched routes on (in.URL.Path), else that path,
// escaped ("*" for OPTIONS *). The backend never gets a path other than
// the one the sidecar decided on.
func clientPath(in *http.Request) string {
	if t := in.RequestURI; strings.HasPrefix(t, "/") {
		path, _, _ := strings.Cut(t, "?")
		if dec, err := url.PathUnescape(path); err == nil && dec == in.URL.Path {
			return path
		}
	}
	if in.URL.Path == "*" {
		return "*"
	}
	if e := in.URL.EscapedPath(); e != "" {
		return e
	}
	return "/"
}

// Header applies the rules both paths share to out, the header of
// the request forwarded for in: no field of the client's in the sidecar's
// namespace (any name that folds to fence-*, namespace.go), the forwarding
// headers by ForwardedConfig's rule, and no User-Agent when the client
// sent none (Go's client would add its own).
func (t *Target) Header(out http.Header, in *http.Request) {
	RemoveSidecarOwned(out) // every spelling: Fence_Token, fence.token, ... (namespace.go)
	t.fwd.apply(out, in)
	if _, ok := in.Header["User-Agent"]; !ok {
		// An empty value tells Go's client to send none.
		out.Set("User-Agent", "")
	}
}

// RemoveHopHeaders removes the hop-by-hop fields from h (RFC 9110 7.6.1):
// the fields its Connection header names, then hopHeaders.
func RemoveHopHeaders(h http.Header) {
	for _, f := range inbound.ListTokens(h.Values("Connection")) {
		h.Del(f)
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
}
