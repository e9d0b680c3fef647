package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate/registry/httpapi"
)

// Handlers built in one process share their routes but each serves its
// own options: its registry's published keys, its client-certificate
// rule, /metrics only with a Gatherer, and its own request counters.
func TestHandlersServeTheirOwnServer(t *testing.T) {
	type built struct {
		h   http.Handler
		kid string
		reg *prometheus.Registry
	}
	build := func(certs, gatherer bool) built {
		t.Helper()
		o, kid, prom := memoryOptions(t)
		o.ClientCertRequired = certs
		if gatherer {
			o.Gatherer = prom
		}
		h, err := httpapi.New(o)
		if err != nil {
			t.Fatal(err)
		}
		return built{h, kid, prom}
	}
	serve := func(b built, method, path string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, nil)
		req.Header.Set(idHeader, "spiffe://test/worker")
		rec := httptest.NewRecorder()
		b.h.ServeHTTP(rec, req)
		return rec
	}
	open, certs := build(false, false), build(true, true)
	other := build(false, true)
	for _, b := range []built{open, other} {
		rec := serve(b, http.MethodGet, "/.well-known/jwks.json")
		var set struct {
			Keys []struct {
				Kid string `json:"kid"`
			} `json:"keys"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &set); err != nil || len(set.Keys) != 1 || set.Keys[0].Kid != b.kid {
			t.Errorf("jwks: %s, want only kid %s (%v)", rec.Body.String(), b.kid, err)
		}
	}
	if rec := serve(certs, http.MethodGet, "/v1/leases/x"); rec.Code != http.StatusUnauthorized {
		t.Errorf("without a certificate where one is required: %d %s", rec.Code, rec.Body.String())
	}
	if rec := serve(open, http.MethodGet, "/v1/leases/x"); rec.Code != http.StatusNotFound {
		t.Errorf("no such lease, no certificate required: %d %s", rec.Code, rec.Body.String())
	}
	if rec := serve(open, http.MethodGet, "/metrics"); rec.Code != http.StatusNotFound {
		t.Errorf("/metrics without a Gatherer: %d", rec.Code)
	}
	rec := serve(other, http.MethodGet, "/metrics")
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != http.StatusOK || !strings.Contains(string(body), "fencegate_registry_http_requests_total") {
		t.Errorf("/metrics with a Gatherer: %d", rec.Code)
	}
	// Each handler counted its own requests: open served 3, other 2
	// (jwks, and /metrics counted after it answered), certs 1.
	for _, c := range []struct {
		b    built
		want float64
	}{{open, 3}, {other, 2}, {certs, 1}} {
		if got := requestCount(t, c.b.reg); got != c.want {
			t.Errorf("requests counted: %v, want %v", got, c.want)
		}
	}
}

func requestCount(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, mf := range mfs {
		if mf.GetName() == "fencegate_registry_http_requests_total" {
			for _, m := range mf.GetMetric() {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}
