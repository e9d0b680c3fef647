package adminapi

import (
	"errors"
	"io"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fencegate/fencegate"
)

// NewHealth returns the health listener's handler: GET and HEAD of
// /healthz, /readyz and /metrics (when o.Gatherer is set), answered to any
// caller without credentials, as kubelet probes and Prometheus call them.
// Nothing else is served: another path is 404, another method on these
// paths 405 (both RFC 9457 problems). No route changes state, none shows a
// record, a receipt or a profile. o.Token and o.Store are not used.
func NewHealth(o Options) (http.Handler, error) {
	if o.Proxy == nil {
		return nil, errors.New("adminapi: a proxy is required")
	}
	s := newServer(o)
	routes := map[string]http.Handler{
		"/healthz": http.HandlerFunc(healthz),
		"/readyz":  http.HandlerFunc(s.readyz),
	}
	if o.Gatherer != nil {
		routes["/metrics"] = promhttp.HandlerFor(o.Gatherer, promhttp.HandlerOpts{})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		h, ok := routes[req.URL.Path]
		switch {
		case !ok || req.URL.RawPath != "":
			problem(w, 404, fencegate.CodeNotFound, "no such route: the health listener serves GET /healthz, /readyz and /metrics only")
		case req.Method != http.MethodGet && req.Method != http.MethodHead:
			w.Header().Set("Allow", "GET, HEAD")
			problem(w, 405, fencegate.CodeMethodNotAllowed, "the health listener serves GET and HEAD only")
		default:
			h.ServeHTTP(w, req)
		}
	}), nil
}

func healthz(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") }
