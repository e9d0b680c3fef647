package inbound

import (
	"net/http"
	"strings"
)

// The read path: what passes through without a route, and what is refused
// before any route is looked at (docs/design.md, the acceptance pipeline, step 1).
//
//   - Only GET, HEAD, OPTIONS and TRACE, spelled exactly so, are reads.
//     Methods are case-sensitive (RFC 9110 9.1): "get", "Put", PROPPATCH,
//     MOVE, PURGE, CONNECT and every extension token are mutations and go
//     through the routes.
//   - A method-override header (X-HTTP-Method-Override, X-HTTP-Method,
//     X-Method-Override, in any case, '_' for '-') is refused on every
//     request: a backend honouring it would turn a read into a write, and
//     silently stripping it would turn a client's POST-as-DELETE into
//     another write. A "_method" form or query parameter is not refused:
//     the frameworks that honour it do so on POST only, and a POST is a
//     mutation, fenced by its route.
//   - A protocol upgrade (an Upgrade header, a Connection header naming
//     upgrade or HTTP2-Settings, an HTTP2-Settings header, the HTTP/2
//     prior-knowledge preface "PRI * HTTP/2.0", an HTTP/2 extended
//     CONNECT's :protocol) is refused, except a GET on a path of a
//     configured upgrades entry asking only for protocols that entry
//     lists. h2c is refused always. What flows in an allowed tunnel is
//     not fenced.
//   - A mutation whose method differs from a route's only in case, on a
//     path that route matches, is that route's business, never an
//     unmatched mutation (caseVariant).

// Verdict is the read-path classification of a request.
type Verdict int

const (
	// VerdictMutation: not a read; the routes decide.
	VerdictMutation Verdict = iota
	// VerdictRead: passes through to the backend without a route (this
	// includes an upgrade an upgrades entry allows).
	VerdictRead
	// VerdictOverride: a method-override header; refused (METHOD_OVERRIDE_REFUSED).
	VerdictOverride
	// VerdictUpgrade: a protocol upgrade no entry allows; refused (UPGRADE_REFUSED).
	VerdictUpgrade
)

// ReadMethod reports whether m is one of the four reads, spelled exactly so.
func ReadMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}

// tchar reports whether c is an RFC 9110 token character.
func tchar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// ValidToken reports whether s is a non-empty RFC 9110 token (a valid method).
func ValidToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !tchar(s[i]) {
			return false
		}
	}
	return true
}

// ASCIIUpper upper-cases ASCII letters only (a method token is ASCII; a
// Unicode mapping would turn "poſt" into "POST").
func ASCIIUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// asciiLower lower-cases ASCII letters only.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c - 'A' + 'a'
		}
	}
	return string(b)
}

// ASCIIEqualFold compares ASCII case-insensitively: a non-ASCII look-alike
// (the Kelvin sign for k) never matches an allowed name.
func ASCIIEqualFold(a, b string) bool { return asciiLower(a) == asciiLower(b) }

// appendFieldKey appends a header field name as a lenient backend may see
// it: case folded, '_' read as '-' (CGI and WSGI map both to '_').
// Callers pass a stack buffer and compare string(b) (a map index or a
// switch on it does not allocate), so classifying a request's header costs
// nothing per field.
func appendFieldKey(b []byte, name string) []byte {
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		case c == '_':
			c = '-'
		}
		b = append(b, c)
	}
	return b
}

// overrideFields are the method-override header names (as appendFieldKey spells them).
var overrideFields = map[string]bool{
	"x-http-method-override": true,
	"x-http-method":          true,
	"x-method-override":      true,
}

// ListTokens splits comma-separated field values into trimmed, non-empty elements.
func ListTokens(values []string) []string {
	var out []string
	for _, v := range values {
		for _, e := range strings.Split(v, ",") {
			if e = strings.Trim(e, " \t"); e != "" {
				out = append(out, e)
			}
		}
	}
	return out
}

// UpgradeSignals reads what in a request asks for another protocol:
// upgrade (any sign of an upgrade), h2 (HTTP2-Settings, a sign of h2c that
// is never allowed) and the protocols its Upgrade fields list.
func UpgradeSignals(method string, h http.Header) (upgrade, h2 bool, protocols []string) {
	var conn []string
	var buf [64]byte
	for k, vs := range h {
		switch string(appendFieldKey(buf[:0], k)) {
		case "upgrade":
			upgrade = true
			protocols = append(protocols, ListTokens(vs)...)
		case "http2-settings":
			upgrade, h2 = true, true
		case ":protocol": // HTTP/2 extended CONNECT (RFC 8441), as net/http passes it on
			upgrade = true
		case "connection":
			conn = append(conn, vs...)
		}
	}
	for _, t := range ListTokens(conn) {
		switch {
		case ASCIIEqualFold(t, "upgrade"):
			upgrade = true
		case ASCIIEqualFold(t, "http2-settings"):
			upgrade, h2 = true, true
		}
	}
	if ASCIIEqualFold(method, "PRI") { // the HTTP/2 connection preface
		upgrade, h2 = true, true
	}
	return upgrade, h2, protocols
}

// Classify is the read-path decision for a request of method on path
// (the escaped path, as routes match it, RoutePath) with header h. allowed
// says whether a configured upgrades entry allows a GET of path asking for
// protocols (nil: none does).
func Classify(method, path string, h http.Header, allowed func(path string, protocols []string) bool) Verdict {
	var buf [64]byte
	for k := range h {
		if overrideFields[string(appendFieldKey(buf[:0], k))] {
			return VerdictOverride
		}
	}
	if upgrade, h2, protocols := UpgradeSignals(method, h); upgrade {
		if h2 || method != http.MethodGet {
			return VerdictUpgrade
		}
		if allowed != nil && allowed(path, protocols) {
			return VerdictRead
		}
		return VerdictUpgrade
	}
	if ReadMethod(method) {
		return VerdictRead
	}
	return VerdictMutation
}

// RoutePath is the path routes (and upgrades entries) match: the escaped
// path when it differs from the decoded one.
func RoutePath(req *http.Request) string {
	if req.URL.RawPath != "" {
		return req.URL.RawPath
	}
	return req.URL.Path
}
