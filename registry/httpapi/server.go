package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/registry"
)

// MaxBodyBytes bounds every request body.
const MaxBodyBytes = 64 << 10

// Admin says who may call /v1/admin: a caller presenting the bearer Token,
// a caller whose identity is in Identities, or (AllowLoopback) any caller
// on a loopback address.
type Admin struct {
	Token         string
	Identities    []string
	AllowLoopback bool
}

// Options configure the handler.
type Options struct {
	Registry *registry.Registry
	Identity *identity.Resolver
	Admin    Admin
	// JWKS is the published trust bundle (public keys only).
	JWKS     jwk.Set
	Logger   *zap.Logger
	Metrics  prometheus.Registerer
	Gatherer prometheus.Gatherer
	// ClientCertRequired: the listener asks for a client certificate only
	// if given (tls.VerifyClientCertIfGiven), so every request but the
	// probes, /metrics and /.well-known/jwks.json must have presented a
	// verified one, or is refused with IDENTITY_REQUIRED (peercert.go).
	// Set it whenever the listener has a client CA.
	ClientCertRequired bool
}

type server struct {
	Options
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	errors   *prometheus.CounterVec
	metrics  http.Handler // /metrics, with a Gatherer
}

// New returns the registry's HTTP handler.
func New(o Options) (http.Handler, error) {
	if o.Registry == nil || o.Identity == nil || o.JWKS == nil {
		return nil, errors.New("httpapi: registry, identity and JWKS are required")
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Metrics == nil {
		o.Metrics = prometheus.NewRegistry()
	}
	s := &server{Options: o}
	s.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fencegate_registry_http_requests_total",
		Help: "Registry API requests by route, method, HTTP status and problem code.",
	}, []string{"route", "method", "status", "code"})
	s.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "fencegate_registry_http_request_seconds",
		Help:    "Registry API latency by route.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18),
	}, []string{"route"})
	s.errors = newErrorCounter()
	for _, c := range []prometheus.Collector{s.requests, s.latency, s.errors} {
		if err := o.Metrics.Register(c); err != nil {
			return nil, fmt.Errorf("httpapi: metrics: %w", err)
		}
	}

	if o.Gatherer != nil {
		s.metrics = promhttp.HandlerFor(o.Gatherer, promhttp.HandlerOpts{})
	}
	mux, patterns := routesFor(o.Gatherer != nil)
	// Each route's latency series exists from start (dashboards, alerts).
	for _, route := range patterns {
		s.latency.WithLabelValues(route)
	}
	return &handler{s: s, mux: mux}, nil
}

// serveMetrics is /metrics (served with a Gatherer only: routesFor).
func (s *server) serveMetrics(w http.ResponseWriter, req *http.Request) {
	s.metrics.ServeHTTP(w, req)
}

// statusRecorder keeps the status and problem code for metrics and logs.
type statusRecorder struct {
	http.ResponseWriter
	status int
	code   string
}

func (w *statusRecorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		s := serverOf(req)
		clk := s.Registry.Clock()
		start := clk.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, req)
		route := chi.RouteContext(req.Context()).RoutePattern()
		if route == "" {
			route = "unmatched"
		}
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		s.requests.WithLabelValues(route, req.Method, fmt.Sprint(status), rec.code).Inc()
		if rec.code != "" {
			s.errors.WithLabelValues(opOf(req.Method, req.URL.Path), rec.code).Inc()
		}
		s.latency.WithLabelValues(route).Observe(clock.Since(clk, start).Seconds())
		if status >= 400 {
			s.Logger.Info("request rejected", zap.String("method", req.Method), zap.String("route", route),
				zap.Int("status", status), zap.String("code", rec.code), zap.Duration("took", clock.Since(clk, start)))
		}
	})
}

func recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		s := serverOf(req)
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.Logger.Error("panic in handler", zap.Any("panic", v), zap.Stack("stack"))
				s.fail(w, req, fencegate.NewProblem(fencegate.CodeInternal, "internal error"), 0)
			}
		}()
		next.ServeHTTP(w, req)
	})
}

func (s *server) fail(w http.ResponseWriter, _ *http.Request, d *fencegate.Problem, retry time.Duration) {
	if rec, ok := w.(*statusRecorder); ok {
		rec.code = string(d.Code)
	}
	fencegate.WriteProblem(w, d, retry)
}

func (s *server) failErr(w http.ResponseWriter, req *http.Request, err error) {
	d, retry := toProblem(err)
	if d.Code == fencegate.CodeBackendUnavailable {
		s.Logger.Error("backend failure", zap.Error(err))
	}
	s.fail(w, req, d, retry)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// decode reads a strict JSON body of at most MaxBodyBytes into v. An
// empty body leaves v as is.
func (s *server) decode(w http.ResponseWriter, req *http.Request, v any) bool {
	return s.decodeLimit(w, req, v, MaxBodyBytes)
}

// decodeLimit is decode with a body limit of limit bytes.
func (s *server) decodeLimit(w http.ResponseWriter, req *http.Request, v any, limit int64) bool {
	if req.ContentLength == 0 && req.Header.Get("Content-Type") == "" {
		return true
	}
	if mt, _, err := mime.ParseMediaType(req.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		s.fail(w, req, fencegate.NewProblem(fencegate.CodeUnsupportedMedia, "body must be application/json"), 0)
		return false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, req.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.fail(w, req, fencegate.NewProblem(fencegate.CodeBodyTooLarge, fmt.Sprintf("body exceeds %d bytes", limit)), 0)
			return false
		}
		if errors.Is(err, io.EOF) {
			return true
		}
		s.fail(w, req, fencegate.NewProblem(fencegate.CodeInvalidRequest, "malformed JSON body: "+err.Error()), 0)
		return false
	}
	if dec.More() {
		s.fail(w, req, fencegate.NewProblem(fencegate.CodeInvalidRequest, "body holds more than one JSON value"), 0)
		return false
	}
	return true
}

// caller establishes the caller's identity or answers 401.
func (s *server) caller(w http.ResponseWriter, req *http.Request) (string, bool) {
	id, err := s.Identity.Identify(req)
	if err == nil {
		err = registry.ValidateOwner(id)
		if err != nil {
			err = fmt.Errorf("%w: %v", identity.ErrNoIdentity, err)
		}
	}
	if err != nil {
		s.failErr(w, req, err)
		return "", false
	}
	return id, true
}

func adminOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		s := serverOf(req)
		if s.isAdmin(req) {
			next.ServeHTTP(w, req)
			return
		}
		s.fail(w, req, fencegate.NewProblem(fencegate.CodeAdminRequired, "admin operations need the admin token, an admin identity or a loopback caller (when allowed)"), 0)
	})
}

func (s *server) isAdmin(req *http.Request) bool {
	a := s.Admin
	if identity.BearerMatches(req, a.Token) {
		return true
	}
	if len(a.Identities) > 0 {
		if id, err := s.Identity.Identify(req); err == nil && slices.Contains(a.Identities, id) {
			return true
		}
	}
	return a.AllowLoopback && identity.FromLoopback(req)
}

func (s *server) ready(w http.ResponseWriter, req *http.Request) {
	ctx, cancel := context.WithTimeout(req.Context(), 2*time.Second)
	defer cancel()
	if err := s.Registry.Ready(ctx); err != nil {
		s.fail(w, req, backendUnavailable("backend not ready"), time.Second)
		return
	}
	_, _ = io.WriteString(w, "ok\n")
}

func (s *server) jwks(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/jwk-set+json")
	w.Header().Set("Cache-Control", "max-age=60")
	_ = json.NewEncoder(w).Encode(s.JWKS)
}
