package proxy

import (
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
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

// verdict is the read-path classification of a request.
type verdict int

const (
	// verdictMutation: not a read; the routes decide.
	verdictMutation verdict = iota
	// verdictRead: passes through to the backend without a route (this
	// includes an upgrade an upgrades entry allows).
	verdictRead
	// verdictOverride: a method-override header; refused (METHOD_OVERRIDE_REFUSED).
	verdictOverride
	// verdictUpgrade: a protocol upgrade no entry allows; refused (UPGRADE_REFUSED).
	verdictUpgrade
)

// readMethod reports whether m is one of the four reads, spelled exactly so.
func readMethod(m string) bool {
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

// validToken reports whether s is a non-empty RFC 9110 token (a valid method).
func validToken(s string) bool {
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

// asciiUpper upper-cases ASCII letters only (a method token is ASCII; a
// Unicode mapping would turn "poſt" into "POST").
func asciiUpper(s string) string {
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

// asciiEqualFold compares ASCII case-insensitively: a non-ASCII look-alike
// (the Kelvin sign for k) never matches an allowed name.
func asciiEqualFold(a, b string) bool { return asciiLower(a) == asciiLower(b) }

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

// listTokens splits comma-separated field values into trimmed, non-empty elements.
func listTokens(values []string) []string {
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

// upgradeSignals reads what in a request asks for another protocol:
// upgrade (any sign of an upgrade), h2 (HTTP2-Settings, a sign of h2c that
// is never allowed) and the protocols its Upgrade fields list.
func upgradeSignals(method string, h http.Header) (upgrade, h2 bool, protocols []string) {
	var conn []string
	var buf [64]byte
	for k, vs := range h {
		switch string(appendFieldKey(buf[:0], k)) {
		case "upgrade":
			upgrade = true
			protocols = append(protocols, listTokens(vs)...)
		case "http2-settings":
			upgrade, h2 = true, true
		case ":protocol": // HTTP/2 extended CONNECT (RFC 8441), as net/http passes it on
			upgrade = true
		case "connection":
			conn = append(conn, vs...)
		}
	}
	for _, t := range listTokens(conn) {
		switch {
		case asciiEqualFold(t, "upgrade"):
			upgrade = true
		case asciiEqualFold(t, "http2-settings"):
			upgrade, h2 = true, true
		}
	}
	if asciiEqualFold(method, "PRI") { // the HTTP/2 connection preface
		upgrade, h2 = true, true
	}
	return upgrade, h2, protocols
}

// upgradeRule is a compiled upgrades entry.
type upgradeRule struct {
	mux       *chi.Mux
	protocols []string
}

// compileUpgrades builds the upgrades entries' matchers.
func compileUpgrades(cfgs []UpgradeConfig) ([]upgradeRule, error) {
	out := make([]upgradeRule, 0, len(cfgs))
	for _, c := range cfgs {
		r := upgradeRule{mux: chi.NewRouter(), protocols: c.Protocols}
		if err := addPattern(r.mux, http.MethodGet, c.Path, "upgrades "+c.Path); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// matches reports whether a GET of path asking for protocols is allowed by
// the rule: the path matches and every protocol's name (before any
// "/version") is one the rule lists, never h2c.
func (r upgradeRule) matches(path string, protocols []string) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	if len(protocols) == 0 || r.mux.Find(chi.NewRouteContext(), http.MethodGet, path) == "" {
		return false
	}
	for _, p := range protocols {
		name, _, _ := strings.Cut(p, "/")
		if asciiEqualFold(name, "h2c") || !containsFold(r.protocols, name) {
			return false
		}
	}
	return true
}

func containsFold(list []string, s string) bool {
	for _, e := range list {
		if asciiEqualFold(e, s) {
			return true
		}
	}
	return false
}

// classify is the read-path decision for a request of method on path
// (the escaped path, as routes match it) with header h.
func classify(method, path string, h http.Header, rules []upgradeRule) verdict {
	var buf [64]byte
	for k := range h {
		if overrideFields[string(appendFieldKey(buf[:0], k))] {
			return verdictOverride
		}
	}
	if upgrade, h2, protocols := upgradeSignals(method, h); upgrade {
		if h2 || method != http.MethodGet {
			return verdictUpgrade
		}
		for _, r := range rules {
			if r.matches(path, protocols) {
				return verdictRead
			}
		}
		return verdictUpgrade
	}
	if readMethod(method) {
		return verdictRead
	}
	return verdictMutation
}

// routePath is the path routes (and upgrades entries) match: the escaped
// path when it differs from the decoded one.
func routePath(req *http.Request) string {
	if req.URL.RawPath != "" {
		return req.URL.RawPath
	}
	return req.URL.Path
}

// classifyRequest classifies req against the configured upgrades entries
// (compiled once, in New).
func (p *Proxy) classifyRequest(req *http.Request) verdict {
	return classify(req.Method, routePath(req), req.Header, p.upgrades)
}

// refuseReadPath answers an override or upgrade refusal; nothing is forwarded.
func (p *Proxy) refuseReadPath(w http.ResponseWriter, req *http.Request, rej *rejection) {
	p.m.mutations.WithLabelValues("read-path", "reject", "rejected", string(rej.code)).Inc()
	p.log.Info("refused", zap.String("method", req.Method), zap.String("path", req.URL.Path),
		zap.String("decision", "rejected"), zap.String("code", string(rej.code)), zap.String("detail", rej.detail))
	if rej.code == fencegate.CodeUpgradeRefused {
		// Whatever the client sends next on this connection is not the
		// request it asked to switch to.
		w.Header().Set("Connection", "close")
	}
	p.writeProblem(w, rej, 0)
}

// caseVariant finds the route a mutation would have matched had its method
// been spelled as the route's: "put /v1/items/1" when PUT /v1/items/{id} is
// a route. Such a request is never passed as unmatched, since many
// backends read methods case-insensitively.
func (p *Proxy) caseVariant(req *http.Request) (*route, string) {
	tried := map[string]bool{}
	// Unicode folding, wider than ASCII: wider refuses more (fail closed).
	for _, r := range p.router.all() {
		if r.Method == req.Method || tried[r.Method] || !strings.EqualFold(r.Method, req.Method) {
			continue
		}
		tried[r.Method] = true
		alt := *req
		alt.Method = r.Method
		if rt, resource, _ := p.router.match(&alt); rt != nil {
			return rt, resource
		}
	}
	return nil, ""
}

// chiMethods serialises registrations of extension methods with chi.
var chiMethods sync.Mutex

// registerRouteMethod makes an extension method known to chi's router
// (chi.RegisterMethod) so that a route may name it. chi keeps its method
// table in a process-wide map, which it reads without a lock: this runs
// while a Proxy's routers are built (New), before it serves a request. chi
// holds at most 63 methods; past that an error is returned.
func registerRouteMethod(m string) (err error) {
	chiMethods.Lock()
	defer chiMethods.Unlock()
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("proxy: method %s: %v", m, v)
		}
	}()
	chi.RegisterMethod(m)
	return nil
}
