package adminapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/proxy/adminapi"
)

// adminRoutes is every route of the admin API, with a body that would
// change state were the call let in.
var adminRoutes = []struct{ method, path, body string }{
	{"GET", "/v1/receipts?resource=item/1&op=x", ""},
	{"GET", "/v1/resources/item/1", ""},
	{"GET", "/v1/unknown", ""},
	{"GET", "/v1/paused", ""},
	{"GET", "/v1/quarantine", ""},
	{"POST", "/v1/reconcile", `{"resource":"item/1","operationId":"x/1","applied":true}`},
	{"POST", "/v1/pause", `{"resource":"item/1"}`},
	{"POST", "/v1/resume", `{"resource":"item/1"}`},
	{"POST", "/v1/trust/reload", `{"force":true}`},
	{"GET", "/v1/store", ""},
	{"POST", "/v1/store/acknowledge-loss", ""},
	{"GET", "/debug/pprof/", ""},
	{"GET", "/debug/pprof/cmdline", ""},
	{"GET", "/debug/pprof/heap", ""},
	{"GET", "/debug/vars", ""},
}

// serve sends one request from remote without credentials.
func serve(h http.Handler, method, path, remote, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.RemoteAddr = remote
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// problemCode is the code of a problem+json answer, or "" for anything else.
func problemCode(rec *httptest.ResponseRecorder) fencegate.Code {
	p, err := fencegate.ReadProblem(rec.Result())
	if err != nil {
		return ""
	}
	return p.Code
}

// TestHealthListenerWithoutCredentials: from an address off loopback,
// without a token, the health handler answers GET and HEAD of /healthz,
// /readyz and /metrics, while the admin handler (configured with a token)
// still refuses every one of its routes with ADMIN_REQUIRED; the admin
// routes do not exist on the health handler (404 problem), and none of
// them changed anything.
func TestHealthListenerWithoutCredentials(t *testing.T) {
	p := newProxy(t)
	reg := prometheus.NewRegistry()
	probe := prometheus.NewCounter(prometheus.CounterOpts{Name: "fencegate_test_probe_total", Help: "test"})
	reg.MustRegister(probe)
	o := adminapi.Options{Proxy: p, Token: "s3cret-token", Gatherer: reg}
	admin, err := adminapi.New(o)
	if err != nil {
		t.Fatal(err)
	}
	health, err := adminapi.NewHealth(o)
	if err != nil {
		t.Fatal(err)
	}
	const outside = "10.1.2.3:40000"
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		for _, method := range []string{"GET", "HEAD"} {
			rec := serve(health, method, path, outside, "")
			if rec.Code != 200 {
				t.Errorf("health %s %s from %s: %d %s", method, path, outside, rec.Code, rec.Body)
			}
		}
		// The admin listener keeps these paths, behind its check.
		if rec := serve(admin, "GET", path, outside, ""); rec.Code != 403 || problemCode(rec) != fencegate.CodeAdminRequired {
			t.Errorf("admin GET %s from %s without the token: %d %s", path, outside, rec.Code, rec.Body)
		}
		if rec := serve(admin, "GET", path, "127.0.0.1:5000", ""); rec.Code != 200 {
			t.Errorf("admin GET %s from loopback: %d %s", path, rec.Code, rec.Body)
		}
	}
	if rec := serve(health, "GET", "/metrics", outside, ""); !strings.Contains(rec.Body.String(), "fencegate_test_probe_total 0") {
		t.Errorf("health /metrics does not serve the gatherer:\n%s", rec.Body)
	}
	for _, r := range adminRoutes {
		if rec := serve(admin, r.method, r.path, outside, r.body); rec.Code != 403 || problemCode(rec) != fencegate.CodeAdminRequired {
			t.Errorf("admin %s %s from %s without the token: %d %s", r.method, r.path, outside, rec.Code, rec.Body)
		}
		for _, remote := range []string{outside, "127.0.0.1:5000"} {
			if rec := serve(health, r.method, r.path, remote, r.body); rec.Code != 404 || problemCode(rec) != fencegate.CodeNotFound {
				t.Errorf("health %s %s from %s: %d %s, want 404 NOT_FOUND", r.method, r.path, remote, rec.Code, rec.Body)
			}
		}
	}
	// Nothing was paused, reconciled or otherwise written.
	ctx := context.Background()
	if paused, err := p.Paused(ctx); err != nil || len(paused) != 0 {
		t.Fatalf("paused after the calls: %v %v", paused, err)
	}
	if _, err := p.Record(ctx, "item/1"); err == nil {
		t.Fatal("a record of item/1 exists after the calls")
	}
}

// TestHealthListenerRefusesEveryOtherMethod: on each path the health
// handler serves, every method but GET and HEAD is refused (405 problem,
// Allow: GET, HEAD), so nothing on that port can change state; paths that
// only look like the served ones are 404.
func TestHealthListenerRefusesEveryOtherMethod(t *testing.T) {
	p := newProxy(t)
	health, err := adminapi.NewHealth(adminapi.Options{Proxy: p, Gatherer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		for _, method := range []string{"POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT", "PROPFIND", "get", "head"} {
			rec := serve(health, method, path, "10.1.2.3:1", "{}")
			if rec.Code != 405 || problemCode(rec) != fencegate.CodeMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
				t.Errorf("%s %s: %d %q %s", method, path, rec.Code, rec.Header().Get("Allow"), rec.Body)
			}
		}
	}
	for _, path := range []string{"/", "/healthz/", "/HEALTHZ", "/readyz/x", "/metrics?x", "/%68ealthz", "//healthz", "/v1/paused", "/debug/pprof/"} {
		rec := serve(health, "GET", path, "10.1.2.3:1", "")
		if path == "/metrics?x" {
			if rec.Code != 200 {
				t.Errorf("GET %s: %d", path, rec.Code)
			}
			continue
		}
		if rec.Code != 404 || problemCode(rec) != fencegate.CodeNotFound {
			t.Errorf("GET %s: %d %s, want 404 NOT_FOUND", path, rec.Code, rec.Body)
		}
	}
}

// TestHealthReadyzFollowsTheChecks: /readyz on the health handler runs
// the same checks as the admin one: a failing check answers 503 with its
// code.
func TestHealthReadyzFollowsTheChecks(t *testing.T) {
	p := newProxy(t)
	failing := adminapi.ReadyCheck{Code: fencegate.CodeStoreUnavailable, Check: func(context.Context) error { return context.DeadlineExceeded }}
	health, err := adminapi.NewHealth(adminapi.Options{Proxy: p, Ready: []adminapi.ReadyCheck{failing}})
	if err != nil {
		t.Fatal(err)
	}
	if rec := serve(health, "GET", "/readyz", "10.1.2.3:1", ""); rec.Code != 503 || problemCode(rec) != fencegate.CodeStoreUnavailable {
		t.Fatalf("/readyz with a failing check: %d %s", rec.Code, rec.Body)
	}
	// No gatherer: no /metrics.
	if rec := serve(health, "GET", "/metrics", "10.1.2.3:1", ""); rec.Code != 404 {
		t.Fatalf("/metrics without a gatherer: %d", rec.Code)
	}
}
