package proxy

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"github.com/go-chi/chi/v5"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/authn"
)

// route is a configured, compiled route.
type route struct {
	RouteConfig
	key string // "METHOD /pattern", the metrics label and ledger key
	// resourceRE matches the resource IDs the template produces.
	resourceRE *regexp.Regexp
	// status is the route's status rule, as authentication takes it.
	status authn.Rule
}

// resourcePatterns are the resource templates' patterns compiled in this
// process (a *regexp.Regexp is safe for concurrent use): a sidecar
// restarted in process, a test or the simulation builds the same routes
// again. At most maxResourcePatterns are kept.
var resourcePatterns struct {
	mu sync.Mutex
	re map[string]*regexp.Regexp
}

const maxResourcePatterns = 256

// resourcePattern is the pattern of the resource IDs template produces.
func resourcePattern(template string) *regexp.Regexp {
	resourcePatterns.mu.Lock()
	re := resourcePatterns.re[template]
	resourcePatterns.mu.Unlock()
	if re != nil {
		return re
	}
	re = compileResourcePattern(template)
	resourcePatterns.mu.Lock()
	if resourcePatterns.re == nil || len(resourcePatterns.re) >= maxResourcePatterns {
		resourcePatterns.re = map[string]*regexp.Regexp{}
	}
	resourcePatterns.re[template] = re
	resourcePatterns.mu.Unlock()
	return re
}

func compileResourcePattern(template string) *regexp.Regexp {
	parts := templateParam.Split(template, -1)
	for i := range parts {
		parts[i] = regexp.QuoteMeta(parts[i])
	}
	return regexp.MustCompile("^" + strings.Join(parts, "[^/]+") + "$")
}

// router matches requests to routes with chi's tree.
//
// chi prefers a static segment to a regexp parameter to a parameter to a
// catch-all, so a route of a lower mode can win a path that an enforced
// route matches too (an off PUT /v1/items/42 next to an enforced PUT
// /v1/items/{id}). Config.Validate refuses a route below enforce that
// overlaps an enforced one; at run time, defensively, a mutation whose best
// match is below enforce is matched again against the trees of the stricter
// modes alone, and the strictest mode that matches decides (enforce >
// shadow > off), with that route's resource template. So a shadow route
// that overlaps an off one (which Validate allows) takes the paths both
// match.
type router struct {
	mux    *chi.Mux
	routes map[string]*route // by key
	// strict holds a tree of only the enforced routes and one of only the
	// shadow routes.
	strict map[Mode]*chi.Mux
}

func newRouter(cfgs []RouteConfig) (*router, error) {
	rt := &router{mux: chi.NewRouter(), routes: map[string]*route{},
		strict: map[Mode]*chi.Mux{ModeEnforce: chi.NewRouter(), ModeShadow: chi.NewRouter()}}
	for _, c := range cfgs {
		r := &route{RouteConfig: c, key: c.Method + " " + c.Path, resourceRE: resourcePattern(c.Resource),
			status: authn.Rule{Mode: authn.StatusMode(c.Status.Mode), MaxAge: c.Status.MaxAge}}
		// An extension method (MOVE, PROPPATCH ...) must be known to chi
		// before a route names it; Config.Validate changes nothing.
		if err := registerRouteMethod(c.Method); err != nil {
			return nil, err
		}
		if err := addPattern(rt.mux, c.Method, c.Path, "route "+r.key); err != nil {
			return nil, err
		}
		if mux := rt.strict[c.Mode]; mux != nil {
			if err := addPattern(mux, c.Method, c.Path, "route "+r.key); err != nil {
				return nil, err
			}
		}
		rt.routes[r.key] = r
	}
	return rt, nil
}

// addPattern adds a method and chi pattern to mux; chi panics on a bad
// pattern, which becomes an error naming what.
func addPattern(mux *chi.Mux, method, pattern, what string) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("proxy: %s: %v", what, v)
		}
	}()
	mux.Method(method, pattern, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	return nil
}

// match finds the route of a request and derives its canonical resource
// ID. A nil route means no route matched.
func (rt *router) match(req *http.Request) (*route, string, error) {
	path := req.URL.RawPath
	if path == "" {
		path = req.URL.Path
	}
	return rt.matchPath(req.Method, path)
}

// matchPath is match for a method and an escaped path.
func (rt *router) matchPath(method, path string) (*route, string, error) {
	r, rctx := rt.find(rt.mux, method, path)
	if r == nil {
		return nil, "", nil
	}
	// The strictest mode that matches decides.
	for _, m := range []Mode{ModeEnforce, ModeShadow} {
		if m == r.Mode {
			break
		}
		if s, sctx := rt.find(rt.strict[m], method, path); s != nil {
			r, rctx = s, sctx
			break
		}
	}
	var bad error
	res := templateParam.ReplaceAllStringFunc(r.Resource, func(m string) string {
		v, err := url.PathUnescape(rctx.URLParam(m[1 : len(m)-1]))
		if err != nil || v == "" || strings.Contains(v, "/") {
			bad = fmt.Errorf("path parameter %s is empty, malformed or holds a slash", m)
		}
		return v
	})
	if bad != nil {
		return r, "", bad
	}
	if err := fencegate.ValidateResource(res); err != nil {
		return r, "", err
	}
	return r, res, nil
}

// find is the route of tree mux for method and path, or nil.
func (rt *router) find(mux *chi.Mux, method, path string) (*route, *chi.Context) {
	rctx := chi.NewRouteContext()
	pattern := mux.Find(rctx, method, path)
	if pattern == "" {
		return nil, nil
	}
	return rt.routes[method+" "+pattern], rctx
}

// all returns the routes.
func (rt *router) all() []*route {
	out := make([]*route, 0, len(rt.routes))
	for _, r := range rt.routes {
		out = append(out, r)
	}
	return out
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
