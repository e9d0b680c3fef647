package httpapi

import (
	"context"
	"io"
	"net/http"
	"sync"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/fencegate/fencegate"
)

// The routes are the same for every handler New builds (only /metrics
// depends on the options: served with a Gatherer), so the chi router is
// built once per process for each of the two sets, and every handler
// serves it with its own server, which the routes' handlers and
// middlewares take from the request's context (serverOf). A router costs
// more to build than most requests to serve; a process that builds many
// handlers (tests, the simulation: one per round) built one each.
var routeSets [2]struct {
	once     sync.Once
	mux      *chi.Mux
	patterns []string // every route's pattern, as chi.Walk lists them
}

// routesFor is the router, and its route patterns, with /metrics served
// or not.
func routesFor(metrics bool) (*chi.Mux, []string) {
	i := 0
	if metrics {
		i = 1
	}
	rs := &routeSets[i]
	rs.once.Do(func() {
		rs.mux = newRoutes(metrics)
		_ = chi.Walk(rs.mux, func(_ string, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
			rs.patterns = append(rs.patterns, route)
			return nil
		})
	})
	return rs.mux, rs.patterns
}

// serverKey is the request context key of the server a request is served
// by (handler.ServeHTTP).
type serverKey struct{}

// serverOf is the server req is served by.
func serverOf(req *http.Request) *server { return req.Context().Value(serverKey{}).(*server) }

// handler is what New returns: the shared routes, served by s.
type handler struct {
	s   *server
	mux *chi.Mux
}

func (h *handler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	h.mux.ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), serverKey{}, h.s)))
}

// Routes, Middlewares, Match and Find make the handler the chi.Routes it
// serves (route listings: docs/registry-api.md's test).
func (h *handler) Routes() []chi.Route          { return h.mux.Routes() }
func (h *handler) Middlewares() chi.Middlewares { return h.mux.Middlewares() }
func (h *handler) Match(rctx *chi.Context, method, path string) bool {
	return h.mux.Match(rctx, method, path)
}
func (h *handler) Find(rctx *chi.Context, method, path string) string {
	return h.mux.Find(rctx, method, path)
}

// on is a route's handler: m of the request's server.
func on(m func(*server, http.ResponseWriter, *http.Request)) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) { m(serverOf(req), w, req) }
}

// newRoutes builds the registry's routes (metrics: /metrics served).
func newRoutes(metrics bool) *chi.Mux {
	r := chi.NewRouter()
	// requireClientCert passes every request through on a server without
	// ClientCertRequired.
	r.Use(observe, recoverer, requireClientCert)
	r.NotFound(func(w http.ResponseWriter, req *http.Request) {
		serverOf(req).fail(w, req, fencegate.NewProblem(fencegate.CodeNotFound, "no such route"), 0)
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		serverOf(req).fail(w, req, fencegate.NewProblem(fencegate.CodeMethodNotAllowed, req.Method+" is not allowed here"), 0)
	})
	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	r.Get("/readyz", on((*server).ready))
	if metrics {
		r.Method(http.MethodGet, "/metrics", on((*server).serveMetrics))
	}
	r.Get("/.well-known/jwks.json", on((*server).jwks))
	// Go's profiles for operators (chi's middleware.Profiler:
	// /debug/pprof/..., /debug/vars), behind the admin check: a profile
	// shows request contents, and a CPU profile costs CPU while it runs.
	r.With(adminOnly).Mount("/debug", middleware.Profiler())
	r.Route("/v1", func(r chi.Router) {
		r.Post("/leases", on((*server).acquire))
		r.Get("/requests/{requestID}", on((*server).lookup))
		r.Get("/leases/{lease}", on((*server).leaseStatus))
		r.Get("/leases/{lease}/status", on((*server).leaseStatus))
		r.Post("/leases/{lease}/renew", on((*server).renew))
		r.Post("/leases/{lease}/release", on((*server).release))
		r.Get("/grants/{digest}/status", on((*server).grantStatus))
		r.Get("/resources/*", on((*server).resource))
		// Flat routes, not a sub-router: "/v1/stores/{store}/" (a trailing
		// slash) is no other spelling of a store route (NOT_FOUND).
		r.Put("/stores/{store}", on((*server).registerStore))
		r.Get("/stores/{store}", on((*server).getStore))
		r.Post("/stores/{store}/progress", on((*server).anchor))
		r.Post("/stores/{store}/ledger", on((*server).ledger))
		r.Get("/stores/{store}/anchors", on((*server).listAnchors))
		r.With(adminOnly).Post("/stores/{store}/acknowledge", on((*server).acknowledge))
		r.Route("/admin", func(r chi.Router) {
			r.Use(adminOnly)
			r.Post("/epoch", on((*server).bumpEpoch))
			r.Post("/fence-floor", on((*server).fenceFloor))
			r.Get("/policies", on((*server).listPolicies))
			r.Put("/policies", on((*server).putPolicy))
			r.Delete("/policies", on((*server).deletePolicy))
			r.Get("/meta", on((*server).meta))
			r.Get("/leases", on((*server).listLeases))
			r.Post("/leases/{lease}/revoke", on((*server).revokeLease))
		})
	})
	return r
}
