package adminapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/proxy"
)

// ReadyCheck is an extra readiness check (e.g. the shared store's
// generation marker): a failing Check makes /readyz answer 503 with Code.
// A check must not depend on the registry: a registry outage must not take
// every sidecar out of its Service (reads still pass, writes fail closed).
type ReadyCheck struct {
	Code  fencegate.Code
	Check func(ctx context.Context) error
}

// Options are the admin API's dependencies. Proxy is required.
type Options struct {
	Proxy *proxy.Proxy
	// Token, when set, lets non-loopback callers in with
	// "Authorization: Bearer <Token>".
	Token string
	// Gatherer, when set, is served on /metrics.
	Gatherer prometheus.Gatherer
	// Ready are checked by /readyz after the store.
	Ready []ReadyCheck
	// Store, when set (a store anchored at the registry), serves GET
	// /v1/store and POST /v1/store/acknowledge-loss.
	Store StoreLoss
	// RegistryURL is the registry the store is anchored at (for the
	// acknowledgement command /v1/store shows).
	RegistryURL string
	Logger      *zap.Logger
}

type server struct {
	Options
}

// New returns the admin API's handler.
func New(o Options) (http.Handler, error) {
	if o.Proxy == nil {
		return nil, errors.New("adminapi: a proxy is required")
	}
	s := newServer(o)
	r := chi.NewRouter()
	r.Use(s.adminOnly)
	r.NotFound(func(w http.ResponseWriter, _ *http.Request) {
		problem(w, 404, fencegate.CodeNotFound, "no such route")
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, _ *http.Request) {
		problem(w, 405, fencegate.CodeInvalidRequest, "method not allowed")
	})
	r.Get("/healthz", healthz)
	r.Get("/readyz", s.readyz)
	if o.Gatherer != nil {
		r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(o.Gatherer, promhttp.HandlerOpts{}))
	}
	// Go's profiles (chi's middleware.Profiler: /debug/pprof/..., and
	// expvar's /debug/vars), behind adminOnly like every admin route: a
	// profile shows request contents (goroutine stacks hold headers), and a
	// CPU profile or trace costs CPU for its whole duration. The admin
	// listener's write timeout (30 s) bounds a profile: ask for less,
	// /debug/pprof/profile?seconds=20.
	r.Mount("/debug", middleware.Profiler())
	r.Route("/v1", func(r chi.Router) {
		r.Get("/receipts", s.receipts)
		r.Get("/receipts/{id}", s.receipt)
		r.Get("/resources/*", s.record)
		r.Get("/unknown", s.unknown)
		r.Get("/paused", s.paused)
		r.Get("/fences", s.fences)
		r.Get("/quarantine", s.quarantine)
		r.Post("/reconcile", s.reconcile)
		r.Post("/pause", s.pause)
		r.Post("/resume", s.resume)
		r.Post("/trust/reload", s.trustReload)
		r.Get("/trust", s.trustList)
		r.Post("/trust/accept", s.trustAccept)
		if o.Store != nil {
			r.Get("/store", s.storeStatus)
			r.Post("/store/acknowledge-loss", s.acknowledgeLoss)
		}
	})
	return r, nil
}

// newServer fills o's defaults.
func newServer(o Options) *server {
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	return &server{Options: o}
}

// adminOnly lets through callers presenting the token, and loopback callers.
func (s *server) adminOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if identity.BearerMatches(req, s.Token) || identity.FromLoopback(req) {
			next.ServeHTTP(w, req)
			return
		}
		problem(w, 403, fencegate.CodeAdminRequired, "the admin API is served to loopback callers or with the admin bearer token")
	})
}

// readyz answers ok when the store answers and every extra check passes.
func (s *server) readyz(w http.ResponseWriter, req *http.Request) {
	ctx, cancel := context.WithTimeout(req.Context(), 2*time.Second)
	defer cancel()
	if _, err := s.Proxy.Paused(ctx); err != nil {
		s.Logger.Error("readiness: listing paused resources failed; answering not ready", zap.Error(err))
		problem(w, 503, fencegate.CodeStoreUnavailable, "store: "+err.Error())
		return
	}
	for _, c := range s.Ready {
		if err := c.Check(ctx); err != nil {
			problem(w, 503, c.Code, err.Error())
			return
		}
	}
	_, _ = io.WriteString(w, "ok\n")
}
