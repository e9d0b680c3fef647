package proxy

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/fencegate/fencegate/internal/confcheck"
	"github.com/fencegate/fencegate/proxy/inbound"
	"github.com/fencegate/fencegate/proxy/overlap"
)

var templateParam = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// Validate reports every problem of the pipeline's settings at once, one
// validator per section, each naming the file's keys. A duration or a
// limit is never negative (zero means the default, which SetDefaults fills
// in). Validate is pure: it changes nothing, not even chi's method table
// (the router registers a route's extension method when it is built).
func (c Config) Validate() error {
	var p confcheck.Problems
	p.Append(c.Backend.validate()...)
	if c.UnmatchedMutations != "reject" && c.UnmatchedMutations != "pass" {
		p.Add("unmatchedMutations: %q is not reject or pass", c.UnmatchedMutations)
	}
	p.Append(validateRoutes(c.Routes)...)
	p.Append(validateOverlaps(c.Routes)...)
	p.Append(c.Retention.validate()...)
	p.Append(c.Identity.Validate()...)
	p.Append(c.Forwarded.validate()...)
	p.Append(c.Trust.validate()...)
	p.Duration("registry.timeout", c.StatusTimeout)
	p.Duration("server.passWriteTimeout", c.PassWriteTimeout)
	p.Duration("reconcile.interval", c.Reconcile.Interval)
	p.Append(validateUpgrades(c.Upgrades)...)
	return p.Err()
}

// validate reports the problems of the backend section.
func (b BackendConfig) validate() []error {
	var p confcheck.Problems
	if u, err := url.Parse(b.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.Add("backend.url: %q must be http(s)://host:port", b.URL)
	}
	p.Positive("backend.timeout", b.Timeout)
	if b.Timeout > MaxBackendTimeout {
		p.Add("backend.timeout: %v is above %v (an in-flight mutation must settle within the store's window)", b.Timeout, MaxBackendTimeout)
	}
	p.Positive("backend.maxApplyDelay", b.MaxApplyDelay)
	if b.MaxApplyDelay > MaxApplyDelayLimit {
		p.Add("backend.maxApplyDelay: %v is above %v (a backend that may apply later needs an effect query that closes the operation: effectQueryCloses)", b.MaxApplyDelay, MaxApplyDelayLimit)
	}
	p.Positive("backend.dialTimeout", b.DialTimeout)
	p.Duration("backend.idleConnTimeout", b.IdleConnTimeout)
	p.Count("backend.maxIdleConnsPerHost", int64(b.MaxIdleConnsPerHost))
	if b.MaxIdleConnsPerHost > math.MaxInt32 {
		p.Add("backend.maxIdleConnsPerHost: %d is too large", b.MaxIdleConnsPerHost)
	}
	p.Count("backend.maxConnsPerHost", int64(b.MaxConnsPerHost))
	p.Count("backend.maxResponseBytes", b.MaxResponseBytes)
	return p
}

// validate reports the problems of the trust section.
func (t TrustConfig) validate() []error {
	var p confcheck.Problems
	if t.Bundle == "" {
		p.Add("trust.bundle: a JWKS file is required")
	}
	p.Positive("trust.reloadInterval", t.ReloadInterval)
	if t.MaxTokenBytes <= 0 {
		p.Add("trust.maxTokenBytes: %d must be positive", t.MaxTokenBytes)
	}
	p.Duration("trust.clockSkew", t.ClockSkew)
	if n := t.VerifyCacheEntries; n != nil && *n < 0 {
		p.Add("trust.verifyCacheEntries: %d must not be negative (0 turns the cache off)", *n)
	}
	return p
}

// validateRoutes reports the problems of the routes section: at least one
// route, each valid, none configured twice.
func validateRoutes(routes []RouteConfig) []error {
	var p confcheck.Problems
	if len(routes) == 0 {
		p.Add("routes: at least one route is required")
	}
	seen := map[string]bool{}
	for i, r := range routes {
		name := fmt.Sprintf("routes[%d]", i)
		p.Append(r.validate(name)...)
		key := inbound.ASCIIUpper(r.Method) + " " + r.Path
		if seen[key] {
			p.Add("%s: %s is configured twice", name, key)
		}
		seen[key] = true
	}
	return p
}

// validate reports the problems of one route, named name (routes[i]).
func (r RouteConfig) validate(name string) []error {
	var p confcheck.Problems
	p.Append(r.validatePattern(name)...)
	p.Append(r.validateResource(name)...)
	switch r.Mode {
	case ModeOff, ModeShadow, ModeEnforce:
	default:
		p.Add("%s.mode: %q is not off, shadow or enforce", name, r.Mode)
	}
	switch r.Status.Mode {
	case StatusProof, StatusRegistry:
	default:
		p.Add("%s.status.mode: %q is not proof or registry", name, r.Status.Mode)
	}
	p.Positive(name+".status.maxAge", r.Status.MaxAge)
	p.Duration(name+".busyWait", r.BusyWait)
	p.Count(name+".bodyLimit", r.BodyLimit)
	if r.BodyLimit == math.MaxInt64 {
		p.Add("%s.bodyLimit: %d is too large", name, r.BodyLimit)
	}
	p.Count(name+".responseStoreLimit", int64(r.ResponseStoreLimit))
	for j, st := range r.AnsweredBeforeEffect {
		if st < 500 || st > 599 {
			p.Add("%s.answeredBeforeEffect[%d]: %d is not a 5xx status (500..599): only a 5xx leaves the outcome unknown", name, j, st)
		}
	}
	p.Append(r.validateEffectQuery(name)...)
	return p
}

// validatePattern reports the problems of a route's method and path: a
// method token other than a read, and a chi pattern.
func (r RouteConfig) validatePattern(name string) []error {
	var p confcheck.Problems
	method := inbound.ASCIIUpper(r.Method)
	switch {
	case !inbound.ValidToken(method):
		p.Add("%s.method: %q is not a method token (RFC 9110)", name, r.Method)
	case inbound.ReadMethod(method):
		p.Add("%s.method: %s is a read (GET, HEAD, OPTIONS and TRACE pass through); a route protects any other method", name, method)
	}
	if !strings.HasPrefix(r.Path, "/") {
		p.Add("%s.path: %q must start with /", name, r.Path)
	} else if inbound.ValidToken(method) && !inbound.ReadMethod(method) {
		if err := validPattern(r.Path, name+".path"); err != nil {
			p.Add("%v", err)
		}
	}
	return p
}

// validPattern checks a chi pattern on a throwaway router. The method is
// one chi always knows: the pattern's syntax does not depend on it, and an
// extension method is registered only when the router is built.
func validPattern(pattern, what string) error {
	return addPattern(chi.NewRouter(), http.MethodPut, pattern, what)
}

// validateResource reports the problems of a route's resource template:
// required, and naming only parameters of the path.
func (r RouteConfig) validateResource(name string) []error {
	var p confcheck.Problems
	if r.Resource == "" {
		p.Add("%s.resource: a resource template is required", name)
	}
	pathParams := map[string]bool{}
	for _, param := range patternParams(r.Path) {
		pathParams[param] = true
	}
	for _, m := range templateParam.FindAllStringSubmatch(r.Resource, -1) {
		if !pathParams[m[1]] {
			p.Add("%s.resource: {%s} is not a parameter of path %s", name, m[1], r.Path)
		}
	}
	return p
}

// validateEffectQuery reports the problems of a route's effect query.
func (r RouteConfig) validateEffectQuery(name string) []error {
	var p confcheck.Problems
	if r.EffectQuery != "" {
		if u, err := url.Parse(templateParam.ReplaceAllString(r.EffectQuery, "x")); err != nil || u.Host == "" {
			p.Add("%s.effectQuery: %q is not an absolute URL template", name, r.EffectQuery)
		}
	} else if r.EffectQueryCloses {
		p.Add("%s.effectQueryCloses: needs an effectQuery", name)
	}
	return p
}

// validateUpgrades checks the upgrades entries: a chi pattern, and protocol
// names that are tokens, never h2c.
func validateUpgrades(upgrades []UpgradeConfig) []error {
	var p confcheck.Problems
	for i, u := range upgrades {
		name := fmt.Sprintf("upgrades[%d]", i)
		if !strings.HasPrefix(u.Path, "/") {
			p.Add("%s.path: %q must start with /", name, u.Path)
		} else if _, err := compileUpgrades([]UpgradeConfig{u}); err != nil {
			p.Add("%s.path: %v", name, err)
		}
		if len(u.Protocols) == 0 {
			p.Add("%s.protocols: at least one protocol (websocket) is required", name)
		}
		for j, proto := range u.Protocols {
			switch {
			case inbound.ASCIIEqualFold(proto, "h2c"):
				p.Add("%s.protocols[%d]: h2c is never allowed (its tunnel would carry unfenced HTTP/2 requests)", name, j)
			case !inbound.ValidToken(proto):
				p.Add("%s.protocols[%d]: %q is not a protocol name", name, j, proto)
			}
		}
	}
	return p
}

// patternParams returns the parameter names of a chi pattern, regexp
// parameters ({id:[0-9]+}) included.
func patternParams(pattern string) []string {
	var out []string
	for i := 0; i < len(pattern); i++ {
		if pattern[i] != '{' {
			continue
		}
		end := matchingBrace(pattern, i)
		if end < 0 {
			break
		}
		name, _, _ := strings.Cut(pattern[i+1:end], ":")
		out = append(out, name)
		i = end
	}
	return out
}

// ErrRouteShadowed: a route below enforce can match a path that an
// enforced route of the same method matches too. Which of the two chi
// picks depends on its priorities (a static segment before a regexp
// parameter before a parameter before a catch-all), so the lower mode
// could take paths the enforced route protects. --force-downgrade does not
// override it: the configuration itself is contradictory.
var ErrRouteShadowed = errors.New("proxy: a route below enforce overlaps an enforced route")

// validateOverlaps refuses every route below enforce that can match a path
// an enforced route of the same method can match (overlap.go; when the
// check cannot rule an overlap out, it counts as one).
func validateOverlaps(routes []RouteConfig) []error {
	// A pattern chi refuses is reported as such, not as overlapping.
	valid := func(r RouteConfig) bool {
		m := inbound.ASCIIUpper(r.Method)
		return inbound.ValidToken(m) && !inbound.ReadMethod(m) && strings.HasPrefix(r.Path, "/") && validPattern(r.Path, "") == nil
	}
	var errs []error
	for i, lo := range routes {
		if lo.Mode != ModeOff && lo.Mode != ModeShadow || !valid(lo) {
			continue
		}
		for j, hi := range routes {
			if hi.Mode != ModeEnforce || inbound.ASCIIUpper(hi.Method) != inbound.ASCIIUpper(lo.Method) || !valid(hi) {
				continue
			}
			if o := overlap.Search([]string{hi.Path, lo.Path}, nil); o.Found {
				errs = append(errs, fmt.Errorf("routes[%d]: %w: %s %s in %s can match paths of the enforced routes[%d] %s %s (%s); "+
					"chi could send them to the lower mode. Make it enforce, narrow its pattern (a regexp parameter) so the two cannot match one path, "+
					"or lower the enforced route itself (the enforcement ledger allows that only with --force-downgrade)",
					i, ErrRouteShadowed, inbound.ASCIIUpper(lo.Method), lo.Path, lo.Mode, j, inbound.ASCIIUpper(hi.Method), hi.Path, o))
			}
		}
	}
	return errs
}
