package proxy

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/fencegate/fencegate"
)

// route is a configured, compiled route.
type route struct {
	RouteConfig
	key string // "METHOD /pattern", the metrics label and ledger key
	// resourceRE matches the resource IDs the template produces.
	resourceRE *regexp.Regexp
}

func resourcePattern(template string) *regexp.Regexp {
	parts := templateParam.Split(template, -1)
	for i := range parts {
		parts[i] = regexp.QuoteMeta(parts[i])
	}
	return regexp.MustCompile("^" + strings.Join(parts, "[^/]+") + "$")
}

// router matches requests to routes with chi's tree.
type router struct {
	mux    *chi.Mux
	routes map[string]*route // by key
}

func newRouter(cfgs []RouteConfig) (*router, error) {
	rt := &router{mux: chi.NewRouter(), routes: map[string]*route{}}
	for _, c := range cfgs {
		r := &route{RouteConfig: c, key: c.Method + " " + c.Path, resourceRE: resourcePattern(c.Resource)}
		if err := addPattern(rt.mux, c.Method, c.Path, "route "+r.key); err != nil {
			return nil, err
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
	rctx := chi.NewRouteContext()
	pattern := rt.mux.Find(rctx, method, path)
	if pattern == "" {
		return nil, "", nil
	}
	r := rt.routes[method+" "+pattern]
	if r == nil {
		return nil, "", nil
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

// all returns the routes.
func (rt *router) all() []*route {
	out := make([]*route, 0, len(rt.routes))
	for _, r := range rt.routes {
		out = append(out, r)
	}
	return out
}
