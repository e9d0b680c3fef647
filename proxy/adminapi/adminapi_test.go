package adminapi_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/proxy"
	"github.com/fencegate/fencegate/proxy/adminapi"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/store/memory"
	"github.com/fencegate/fencegate/verify/verifytest"
)

// newProxy is a real sidecar pipeline over the memory store.
func newProxy(t *testing.T) *proxy.Proxy {
	t.Helper()
	st := memory.New(memory.Options{})
	t.Cleanup(func() { _ = st.Close() })
	return newProxyOn(t, st)
}

// newProxyOn is a real sidecar pipeline over st.
func newProxyOn(t testing.TB, st store.Store) *proxy.Proxy {
	t.Helper()
	bundle := verifytest.BundleFile(t, verifytest.NewIssuer(t, jwa.EdDSA))
	cfg := proxy.Config{
		Backend:  proxy.BackendConfig{URL: "http://127.0.0.1:1", Timeout: time.Minute},
		Routes:   []proxy.RouteConfig{{Method: "PUT", Path: "/v1/items/{id}", Resource: "item/{id}", Status: proxy.RouteStatus{Mode: proxy.StatusProof}}},
		Identity: identity.Config{Mode: identity.ModeInsecureHeader},
		Trust:    proxy.TrustConfig{Bundle: bundle},
	}
	cfg.SetDefaults()
	p, err := proxy.New(proxy.Options{Config: cfg, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// call serves one request from remote (host:port) with an optional
// bearer token through h, and returns the status and problem code.
func call(h http.Handler, method, path, remote, token string) (int, fencegate.Code) {
	req := httptest.NewRequest(method, path, strings.NewReader("{}"))
	req.RemoteAddr = remote
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code < 400 {
		return rec.Code, ""
	}
	p, err := fencegate.ReadProblem(rec.Result())
	if err != nil {
		return rec.Code, "<not problem+json>"
	}
	return rec.Code, p.Code
}

// TestAdminOnly: loopback callers and callers with the exact token get in;
// anyone else, including a token that is a prefix, a different case of
// "Bearer", or a token offered when none is configured, gets 403
// ADMIN_REQUIRED on every route, and nothing runs.
func TestAdminOnly(t *testing.T) {
	p := newProxy(t)
	withToken, err := adminapi.New(adminapi.Options{Proxy: p, Token: "s3cret-token"})
	if err != nil {
		t.Fatal(err)
	}
	noToken, err := adminapi.New(adminapi.Options{Proxy: p})
	if err != nil {
		t.Fatal(err)
	}
	const outside = "10.1.2.3:40000"
	for _, c := range []struct {
		name   string
		h      http.Handler
		remote string
		token  string
		ok     bool
	}{
		{"loopback v4", withToken, "127.0.0.1:5000", "", true},
		{"loopback v6", withToken, "[::1]:5000", "", true},
		{"outside, token", withToken, outside, "s3cret-token", true},
		{"outside, no token", withToken, outside, "", false},
		{"outside, wrong token", withToken, outside, "s3cret-tokeN", false},
		{"outside, token prefix", withToken, outside, "s3cret", false},
		{"outside, token with suffix", withToken, outside, "s3cret-token2", false},
		{"outside, no token configured, one offered", noToken, outside, "anything", false},
		{"outside, no token configured, empty bearer", noToken, outside, " ", false},
		{"unparsable remote address", withToken, "not-an-address", "", false},
		{"IPv4-mapped outside address", withToken, "[::ffff:10.1.2.3]:1", "", false},
	} {
		for _, route := range []struct {
			method, path string
			okStatus     int // the answer to an admitted caller; 0: anything but ADMIN_REQUIRED
		}{
			{"GET", "/metrics", 0}, {"GET", "/v1/paused", 0}, {"GET", "/v1/fences", 0}, {"POST", "/v1/resume", 0}, {"POST", "/v1/trust/reload", 0}, {"GET", "/v1/trust", 0}, {"POST", "/v1/trust/accept", 0}, {"GET", "/no/such/route", 0},
			{"GET", "/debug/pprof/", 200}, {"GET", "/debug/pprof/cmdline", 200}, {"GET", "/debug/pprof/goroutine?debug=1", 200},
			{"GET", "/debug/pprof/heap", 200}, {"GET", "/debug/pprof/symbol", 200}, {"POST", "/debug/pprof/symbol", 200},
		} {
			st, code := call(c.h, route.method, route.path, c.remote, c.token)
			if denied := st == 403 && code == fencegate.CodeAdminRequired; denied == c.ok {
				t.Errorf("%s: %s %s answered %d %s", c.name, route.method, route.path, st, code)
			}
			if c.ok && route.okStatus != 0 && st != route.okStatus {
				t.Errorf("%s: %s %s answered %d %s, want %d", c.name, route.method, route.path, st, code, route.okStatus)
			}
		}
	}
}

// TestAcknowledgeLossRoute: without an anchored store there is no such
// route. (proxy/server's TestRedisLossAcknowledgedAtTheRegistry drives it
// on a real Redis and a real registry.)
func TestAcknowledgeLossRoute(t *testing.T) {
	plain, _ := adminapi.New(adminapi.Options{Proxy: newProxy(t)})
	if st, code := call(plain, "POST", "/v1/store/acknowledge-loss", "127.0.0.1:1", ""); st != 404 || code != fencegate.CodeNotFound {
		t.Errorf("without an anchored store: %d %s, want 404", st, code)
	}
	if st, code := call(plain, "GET", "/v1/store", "127.0.0.1:1", ""); st != 404 || code != fencegate.CodeNotFound {
		t.Errorf("GET /v1/store without an anchored store: %d %s, want 404", st, code)
	}
}
