package proxy_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/proxy"
	proxyserver "github.com/fencegate/fencegate/proxy/server"
)

// rpBackend is a legacy service that records every request it receives,
// also those sent inside a protocol upgrade's tunnel: on any Upgrade it
// switches protocols (101), then echoes bytes for websocket, or serves
// HTTP/1 requests from the tunnel for any other protocol (an h2c server
// would serve HTTP/2 ones; what matters is that a grant-less write in the
// tunnel reaches it).
type rpBackend struct {
	mu   sync.Mutex
	seen []string // "METHOD target"; tunnelled requests start with "tunnel "
	srv  *httptest.Server
}

func newRPBackend(t *testing.T) *rpBackend {
	b := &rpBackend{}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.note(r.Method + " " + r.URL.RequestURI())
		proto := r.Header.Get("Upgrade")
		if proto == "" {
			io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, "read ok")
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: "+proto+"\r\n\r\n")
		if strings.EqualFold(proto, "websocket") {
			io.Copy(conn, brw)
			return
		}
		for {
			in, err := http.ReadRequest(brw.Reader)
			if err != nil {
				return
			}
			io.Copy(io.Discard, in.Body)
			b.note("tunnel " + in.Method + " " + in.URL.RequestURI())
			io.WriteString(conn, "HTTP/1.1 204 No Content\r\n\r\n")
		}
	}))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *rpBackend) note(s string) { b.mu.Lock(); b.seen = append(b.seen, s); b.mu.Unlock() }

func (b *rpBackend) requests() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.seen...)
}

// rpOn puts the fixture's sidecar in front of b.
func rpOn(b *rpBackend, more ...func(*proxy.Config)) func(*proxy.Config) {
	return func(c *proxy.Config) {
		c.Backend.URL = b.srv.URL
		for _, m := range more {
			m(c)
		}
	}
}

func rpPass(c *proxy.Config) { c.UnmatchedMutations = "pass" }

// rpConn is a raw HTTP/1.1 connection to the sidecar.
type rpConn struct {
	t    *testing.T
	conn net.Conn
	br   *bufio.Reader
}

func rpDial(t *testing.T, addr string) *rpConn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	// A guard against a hung test, not an assertion on speed.
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	t.Cleanup(func() { conn.Close() })
	return &rpConn{t: t, conn: conn, br: bufio.NewReader(conn)}
}

func (c *rpConn) write(raw string) {
	c.t.Helper()
	if _, err := io.WriteString(c.conn, raw); err != nil {
		c.t.Fatal(err)
	}
}

// read reads one response to a request of method; code is its problem code.
func (c *rpConn) read(method string) (resp *http.Response, code fencegate.Code) {
	c.t.Helper()
	resp, err := http.ReadResponse(c.br, &http.Request{Method: method})
	if err != nil {
		c.t.Fatalf("reading the answer to %s: %v", method, err)
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return resp, ""
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") == fencegate.ProblemContentType && method != http.MethodHead {
		d, err := fencegate.ReadProblem(resp)
		if err != nil {
			c.t.Fatal(err)
		}
		return resp, d.Code
	}
	io.Copy(io.Discard, resp.Body)
	return resp, ""
}

// rpExchange sends one raw request on a new connection and reads its answer.
func rpExchange(t *testing.T, addr, method, target, headers string) (int, fencegate.Code) {
	t.Helper()
	c := rpDial(t, addr)
	c.write(method + " " + target + " HTTP/1.1\r\nHost: app.local\r\n" + headers + "Content-Length: 0\r\n\r\n")
	resp, code := c.read(method)
	return resp.StatusCode, code
}

func rpAddr(f *fixture) string { return f.srv.Listener.Addr().String() }

// TestReadPathMethodsAreCaseSensitive (issue 8.1): only GET, HEAD, OPTIONS
// and TRACE spelled exactly so are reads. "put", "Put", WebDAV methods,
// PURGE, CONNECT and extension tokens are mutations: with the default
// unmatchedMutations: reject they are refused, and never reach the backend.
func TestReadPathMethodsAreCaseSensitive(t *testing.T) {
	b := newRPBackend(t)
	f := newFixture(t, rpOn(b))
	for _, m := range []string{"put", "Put", "pUT", "get", "Get", "head", "options", "trace",
		"PROPPATCH", "PROPFIND", "MOVE", "COPY", "MKCOL", "LOCK", "UNLOCK", "PURGE", "QUERY", "CONNECT", "BREW", "X-Wr~ite"} {
		status, code := rpExchange(t, rpAddr(f), m, "/v1/items/1", "")
		if status != http.StatusForbidden || code != fencegate.CodeRouteNotProtected {
			t.Errorf("%s /v1/items/1: %d %q, want 403 %s", m, status, code, fencegate.CodeRouteNotProtected)
		}
	}
	// CONNECT in authority form has no path at all.
	if status, code := rpExchange(t, rpAddr(f), "CONNECT", "backend.internal:443", ""); status != http.StatusForbidden || code != fencegate.CodeRouteNotProtected {
		t.Errorf("CONNECT host:port: %d %q", status, code)
	}
	if got := b.requests(); len(got) != 0 {
		t.Fatalf("the backend received %q: a mutation passed as a read", got)
	}
	for _, m := range []string{"GET", "HEAD", "OPTIONS", "TRACE"} {
		if status, _ := rpExchange(t, rpAddr(f), m, "/v1/items/1", ""); status != http.StatusOK {
			t.Errorf("read %s: %d", m, status)
		}
	}
	if got := b.requests(); len(got) != 4 {
		t.Fatalf("reads reaching the backend: %q", got)
	}
}

// TestReadPathCaseVariantNeverPassesUnmatched (issue 8.1): with
// unmatchedMutations: pass, "put /v1/items/1" is not an unmatched mutation
// when PUT /v1/items/{id} is protected: it is refused (enforce), counted
// and forwarded as the route's (shadow), passed like the route (off).
// Truly unmatched mutations still pass.
func TestReadPathCaseVariantNeverPassesUnmatched(t *testing.T) {
	b := newRPBackend(t)
	f := newFixture(t, rpOn(b, rpPass))
	for _, m := range []string{"put", "Put", "pUT", "puT"} {
		status, code := rpExchange(t, rpAddr(f), m, "/v1/items/1", fencegate.HeaderGrant+": not-even-a-grant\r\n")
		if status != http.StatusForbidden || code != fencegate.CodeRouteNotProtected {
			t.Errorf("%s /v1/items/1 with unmatchedMutations: pass: %d %q, want 403 %s", m, status, code, fencegate.CodeRouteNotProtected)
		}
	}
	if got := b.requests(); len(got) != 0 {
		t.Fatalf("a case variant of a protected route reached the backend: %q", got)
	}
	// A shadow route never rejects: its variant is forwarded and counted.
	if status, _ := rpExchange(t, rpAddr(f), "post", "/v1/shadow/1", ""); status != http.StatusOK {
		t.Errorf("post on a shadow route: %d", status)
	}
	if n := f.counter("fencegate_proxy_shadow_would_reject_total", "code", string(fencegate.CodeRouteNotProtected)); n != 1 {
		t.Errorf("shadow would-reject of the case variant: %v", n)
	}
	// Off and truly unmatched: passed, as configured.
	for _, c := range []struct{ m, path string }{{"delete", "/v1/off/1"}, {"put", "/v1/unrouted/1"}, {"PROPPATCH", "/v1/items/1"}} {
		if status, _ := rpExchange(t, rpAddr(f), c.m, c.path, ""); status != http.StatusOK {
			t.Errorf("%s %s with unmatchedMutations: pass: %d", c.m, c.path, status)
		}
	}
	want := []string{"post /v1/shadow/1", "delete /v1/off/1", "put /v1/unrouted/1", "PROPPATCH /v1/items/1"}
	if got := b.requests(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("backend saw %q, want %q", got, want)
	}
}

// TestReadPathExtensionMethodRoutes (issue 8.1): a route may name any
// method token but the four reads (lower case in config is upper-cased);
// the request must spell it exactly.
func TestReadPathExtensionMethodRoutes(t *testing.T) {
	b := newRPBackend(t)
	f := newFixture(t, rpOn(b, rpPass, func(c *proxy.Config) {
		c.Routes = append(c.Routes,
			proxy.RouteConfig{Method: "proppatch", Path: "/v1/props/{id}", Resource: "prop/{id}", Status: proxy.RouteStatus{Mode: proxy.StatusProof}},
			proxy.RouteConfig{Method: "PURGE", Path: "/v1/cache/{id}", Resource: "cache/{id}", Status: proxy.RouteStatus{Mode: proxy.StatusProof}},
			proxy.RouteConfig{Method: "CONNECT", Path: "/v1/tunnels/{id}", Resource: "tunnel/{id}", Status: proxy.RouteStatus{Mode: proxy.StatusProof}})
	}))
	if f.proxy == nil {
		t.Fatal("a configuration with extension-method routes did not start")
	}
	for _, c := range []struct{ m, path string }{{"PROPPATCH", "/v1/props/1"}, {"PURGE", "/v1/cache/1"}, {"CONNECT", "/v1/tunnels/1"}} {
		status, code := rpExchange(t, rpAddr(f), c.m, c.path, idHeader+": worker-a\r\n")
		if status != http.StatusPreconditionRequired || code != fencegate.CodeGrantRequired {
			t.Errorf("%s %s without a grant: %d %q, want 428 %s", c.m, c.path, status, code, fencegate.CodeGrantRequired)
		}
	}
	for _, m := range []string{"proppatch", "PropPatch"} {
		if status, code := rpExchange(t, rpAddr(f), m, "/v1/props/1", ""); status != http.StatusForbidden || code != fencegate.CodeRouteNotProtected {
			t.Errorf("%s /v1/props/1: %d %q", m, status, code)
		}
	}
	if got := b.requests(); len(got) != 0 {
		t.Fatalf("the backend received %q", got)
	}
	tok, g := f.crafted("prop/1", "worker-a", 3)
	status, code := rpExchange(t, rpAddr(f), "PROPPATCH", "/v1/props/1",
		idHeader+": worker-a\r\n"+fencegate.HeaderGrant+": "+string(tok)+"\r\n"+fencegate.HeaderStatus+": "+f.proof(tok, g)+"\r\n")
	if status != http.StatusOK || code != "" {
		t.Fatalf("a granted PROPPATCH: %d %q", status, code)
	}
	if got := b.requests(); len(got) != 1 || got[0] != "PROPPATCH /v1/props/1" {
		t.Fatalf("backend saw %q", got)
	}
	if rec, ok := f.record("prop/1"); !ok || rec.HighestFence != 3 {
		t.Fatalf("the granted PROPPATCH was not fenced: %+v", rec)
	}
}

// TestReadPathMethodOverrideRefused (issue 8.2): method-override headers
// are refused on every request, read or mutation, in any spelling.
func TestReadPathMethodOverrideRefused(t *testing.T) {
	b := newRPBackend(t)
	f := newFixture(t, rpOn(b, rpPass))
	names := []string{"X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override", "x-http-method-override", "X_HTTP_METHOD_OVERRIDE", "x-method-override"}
	targets := []struct{ m, path string }{
		{"GET", "/v1/items/1"}, {"HEAD", "/v1/items/1"}, {"OPTIONS", "/v1/items/1"}, {"TRACE", "/v1/items/1"},
		{"POST", "/v1/unrouted/1"}, {"POST", "/v1/shadow/1"}, {"PUT", "/v1/items/1"},
	}
	for _, n := range names {
		for _, tg := range targets {
			status, code := rpExchange(t, rpAddr(f), tg.m, tg.path, n+": DELETE\r\n")
			if status != http.StatusBadRequest || (tg.m != http.MethodHead && code != fencegate.CodeMethodOverrideRefused) {
				t.Errorf("%s %s with %s: %d %q, want 400 %s", tg.m, tg.path, n, status, code, fencegate.CodeMethodOverrideRefused)
			}
		}
	}
	if got := b.requests(); len(got) != 0 {
		t.Fatalf("the backend received %q: a method override got through", got)
	}
	// _method is honoured by frameworks on POST only (a mutation, fenced):
	// a read carrying it passes.
	if status, _ := rpExchange(t, rpAddr(f), "GET", "/v1/items/1?_method=DELETE", ""); status != http.StatusOK {
		t.Fatalf("GET with _method: %d", status)
	}
}

// TestReadPathUpgradesRefused (issue 8.3): with no upgrades entry, no
// request asking for another protocol reaches the backend.
func TestReadPathUpgradesRefused(t *testing.T) {
	b := newRPBackend(t)
	f := newFixture(t, rpOn(b, rpPass))
	ws := "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
	h2c := "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n"
	cases := []struct{ m, path, headers string }{
		{"GET", "/ws/1", ws},
		{"GET", "/v1/items/1", h2c},
		{"GET", "/v1/items/1", "Upgrade: websocket\r\n"},
		{"GET", "/v1/items/1", "Connection: keep-alive, upgrade\r\n"},
		{"GET", "/v1/items/1", "HTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n"},
		{"HEAD", "/v1/items/1", h2c},
		{"OPTIONS", "/v1/items/1", ws},
		{"POST", "/v1/unrouted/1", ws},
		{"PUT", "/v1/items/1", h2c},
	}
	for _, c := range cases {
		status, code := rpExchange(t, rpAddr(f), c.m, c.path, c.headers)
		if status != http.StatusBadRequest || (c.m != http.MethodHead && code != fencegate.CodeUpgradeRefused) {
			t.Errorf("%s %s with %q: %d %q, want 400 %s", c.m, c.path, c.headers, status, code, fencegate.CodeUpgradeRefused)
		}
	}
	if got := b.requests(); len(got) != 0 {
		t.Fatalf("the backend received %q: an upgrade got through", got)
	}
}

// TestReadPathH2CSmuggling (issue 8.3): an h2c upgrade on a read, then a
// grant-less PUT sent in the tunnel (after a 101, or pipelined right
// behind the upgrade request): nothing reaches the backend.
func TestReadPathH2CSmuggling(t *testing.T) {
	b := newRPBackend(t)
	f := newFixture(t, rpOn(b))
	upgrade := "GET /v1/items/1 HTTP/1.1\r\nHost: app.local\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n"
	smuggled := "PUT /v1/items/1 HTTP/1.1\r\nHost: app.local\r\nContent-Length: 5\r\n\r\nevil!"

	c := rpDial(t, rpAddr(f))
	c.write(upgrade)
	resp, code := c.read("GET")
	if resp.StatusCode == http.StatusSwitchingProtocols {
		c.write(smuggled)
		tr, err := http.ReadResponse(c.br, &http.Request{Method: "PUT"})
		if err == nil {
			tr.Body.Close()
		}
		t.Errorf("the h2c upgrade was switched (101); the tunnelled PUT was answered %v", err)
	} else if resp.StatusCode != http.StatusBadRequest || code != fencegate.CodeUpgradeRefused {
		t.Errorf("h2c upgrade: %d %q, want 400 %s", resp.StatusCode, code, fencegate.CodeUpgradeRefused)
	}

	p := rpDial(t, rpAddr(f))
	p.write(upgrade + smuggled)
	if resp, code := p.read("GET"); resp.StatusCode != http.StatusBadRequest || code != fencegate.CodeUpgradeRefused {
		t.Errorf("pipelined h2c upgrade: %d %q", resp.StatusCode, code)
	}
	// The refusal closes the connection: the pipelined PUT is never read.
	if _, err := http.ReadResponse(p.br, &http.Request{Method: "PUT"}); err == nil {
		t.Error("the connection stayed open after a refused upgrade")
	}
	if got := b.requests(); len(got) != 0 {
		t.Fatalf("the backend received %q: h2c smuggling got through", got)
	}
}

// TestReadPathAllowedWebsocket (issue 8.3): an upgrades entry lets a GET on
// its path switch to its protocols, end to end through the sidecar;
// everything else stays refused.
func TestReadPathAllowedWebsocket(t *testing.T) {
	b := newRPBackend(t)
	f := newFixture(t, rpOn(b, func(c *proxy.Config) {
		c.Upgrades = []proxy.UpgradeConfig{{Path: "/ws/{room}", Protocols: []string{"websocket"}}}
	}))
	c := rpDial(t, rpAddr(f))
	c.write("GET /ws/lobby HTTP/1.1\r\nHost: app.local\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
	resp, _ := c.read("GET")
	if resp.StatusCode != http.StatusSwitchingProtocols || !strings.EqualFold(resp.Header.Get("Upgrade"), "websocket") {
		t.Fatalf("allowed websocket upgrade: %d %v", resp.StatusCode, resp.Header)
	}
	c.write("hello through the tunnel")
	buf := make([]byte, len("hello through the tunnel"))
	if _, err := io.ReadFull(c.br, buf); err != nil || string(buf) != "hello through the tunnel" {
		t.Fatalf("echo through the tunnel: %q %v", buf, err)
	}

	ws := "Connection: Upgrade\r\nUpgrade: websocket\r\n"
	for _, x := range []struct{ m, path, headers string }{
		{"GET", "/ws/lobby", "Connection: Upgrade\r\nUpgrade: h2c\r\n"},
		{"GET", "/ws/lobby", "Connection: Upgrade\r\nUpgrade: websocket, h2c\r\n"},
		{"GET", "/ws/lobby", "Connection: Upgrade\r\nUpgrade: chat\r\n"},
		{"GET", "/ws/lobby", ws + "HTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n"},
		{"GET", "/ws/lobby/more", ws},
		{"GET", "/v1/items/1", ws},
		{"get", "/ws/lobby", ws},
		{"POST", "/ws/lobby", ws},
		{"GET", "/ws/lobby", "Connection: Upgrade\r\n"},
	} {
		status, code := rpExchange(t, rpAddr(f), x.m, x.path, x.headers)
		if status != http.StatusBadRequest || code != fencegate.CodeUpgradeRefused {
			t.Errorf("%s %s with %q: %d %q, want 400 %s", x.m, x.path, x.headers, status, code, fencegate.CodeUpgradeRefused)
		}
	}
	if got := b.requests(); len(got) != 1 || got[0] != "GET /ws/lobby" {
		t.Fatalf("backend saw %q, want only the allowed upgrade", got)
	}
}

// TestReadPathHTTP2PriorKnowledge (issue 8.3): the HTTP/2 prior-knowledge
// preface sent to the sidecar's own http.Server (proxy/server) never reaches
// the backend, even with unmatchedMutations: pass.
func TestReadPathHTTP2PriorKnowledge(t *testing.T) {
	b := newRPBackend(t)
	f := newFixture(t)
	cfg := proxyserver.Config{
		Listen: "127.0.0.1:0", Admin: proxyserver.AdminConfig{Listen: "127.0.0.1:0"}, DataDir: t.TempDir(),
		Backend: f.cfg.Backend, Routes: f.cfg.Routes, Identity: f.cfg.Identity, Trust: f.cfg.Trust, Reconcile: f.cfg.Reconcile,
		Registry: proxyserver.RegistryConfig{URL: f.regSrv.URL, Timeout: f.cfg.StatusTimeout},
		Store:    proxyserver.StoreConfig{Backend: "memory"},
	}
	cfg.Backend.URL = b.srv.URL
	cfg.UnmatchedMutations = "pass"
	srv, err := proxyserver.New(cfg, zap.NewNop(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Error(err)
		}
	})

	c := rpDial(t, srv.Addr())
	settings := string([]byte{0, 0, 0, 4, 0, 0, 0, 0, 0}) // an empty SETTINGS frame
	c.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + settings)
	if resp, code := c.read("PRI"); resp.StatusCode != http.StatusBadRequest || code != fencegate.CodeUpgradeRefused {
		t.Errorf("the HTTP/2 preface was answered %d %q, want 400 %s", resp.StatusCode, code, fencegate.CodeUpgradeRefused)
	}
	io.Copy(io.Discard, c.br) // until the sidecar closes the connection
	if got := b.requests(); len(got) != 0 {
		t.Fatalf("the backend received %q: the HTTP/2 preface got through", got)
	}
}
