package proxy_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/authn"
	"github.com/fencegate/fencegate/proxy"
)

func TestBadInput(t *testing.T) {
	f := newFixture(t)
	tok, g := f.crafted("doc/1", "worker-a", 5)
	sum := sha256.Sum256([]byte("body"))
	goodDigest := "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"
	cases := []struct {
		name   string
		c      call
		status int
		code   fencegate.Code
	}{
		{"duplicated segment", call{hdr: http.Header{fencegate.HeaderSegment: {"1", "2"}}}, 400, fencegate.CodeFenceHeaderInvalid},
		{"segment list", call{seg: "1, 2"}, 400, fencegate.CodeFenceHeaderInvalid},
		{"segment zero", call{seg: "0"}, 400, fencegate.CodeFenceHeaderInvalid},
		{"segment negative", call{seg: "-1"}, 400, fencegate.CodeFenceHeaderInvalid},
		{"segment text", call{seg: "one"}, 400, fencegate.CodeFenceHeaderInvalid},
		{"segment overflow", call{seg: "18446744073709551616"}, 400, fencegate.CodeFenceHeaderInvalid},
		{"duplicated status", call{hdr: http.Header{fencegate.HeaderStatus: {"a", "b"}}}, 400, fencegate.CodeFenceHeaderInvalid},
		{"body over the route limit", call{body: strings.Repeat("x", 2000)}, 413, fencegate.CodeBodyTooLarge},
		{"content digest mismatch", call{body: "body!", hdr: http.Header{"Content-Digest": {goodDigest}}}, 400, fencegate.CodeDigestMismatch},
		{"content digest malformed", call{body: "body", hdr: http.Header{"Content-Digest": {"sha-256=nope"}}}, 400, fencegate.CodeDigestMismatch},
		{"slash in a path parameter", call{path: "/v1/docs/a%2Fb"}, 400, fencegate.CodeInvalidResource},
		{"dot-dot resource", call{path: "/v1/docs/.."}, 400, fencegate.CodeInvalidResource},
		{"unprotected mutation", call{path: "/v1/other/1", method: "POST"}, 403, fencegate.CodeRouteNotProtected},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c
			if c.path == "" {
				c.path = "/v1/docs/1"
			}
			c.owner, c.grant = "worker-a", string(tok)
			if c.hdr.Get(fencegate.HeaderStatus) == "" {
				c.status = f.proof(tok, g)
			}
			f.do(c).expect(t, tc.status, tc.code)
			if f.back.count() != 0 {
				t.Fatal("bad input reached the backend")
			}
			if rec, ok := f.record("doc/1"); ok {
				t.Fatalf("bad input touched the store: %+v", rec)
			}
		})
	}
	f.do(call{path: "/v1/docs/1", owner: "worker-a", grant: string(tok), status: f.proof(tok, g), body: "body", hdr: http.Header{"Content-Digest": {goodDigest}}}).expect(t, 201, "")
}

// TestChunkedBodies: a body without Content-Length is read within the limit.
func TestChunkedBodies(t *testing.T) {
	f := newFixture(t)
	tok, g := f.crafted("doc/1", "worker-a", 5)
	for _, tc := range []struct {
		size   int
		status int
		code   fencegate.Code
	}{{3000, 413, fencegate.CodeBodyTooLarge}, {500, 201, ""}} {
		req, _ := http.NewRequest("PUT", f.srv.URL+"/v1/docs/1", io.MultiReader(strings.NewReader(strings.Repeat("c", tc.size))))
		req.ContentLength = -1 // chunked
		req.Header.Set(idHeader, "worker-a")
		req.Header.Set(fencegate.HeaderGrant, string(tok))
		req.Header.Set(fencegate.HeaderStatus, f.proof(tok, g))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Fatalf("chunked %d bytes: %d, want %d", tc.size, resp.StatusCode, tc.status)
		}
	}
	if f.back.count() != 1 || len(f.back.bodies[0]) != 500 {
		t.Fatalf("backend got %d requests", f.back.count())
	}
}

// TestSlowClient: a client that stops sending its body is cut by the read
// timeout; nothing is forwarded or recorded.
func TestSlowClient(t *testing.T) {
	f := newFixture(t)
	tok, g := f.crafted("doc/1", "worker-a", 5)
	srv := httptest.NewUnstartedServer(f.proxy)
	srv.Config.ReadTimeout = 200 * time.Millisecond
	srv.Start()
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "PUT /v1/docs/1 HTTP/1.1\r\nHost: x\r\n"+idHeader+": worker-a\r\n"+fencegate.HeaderGrant+": "+string(tok)+"\r\n"+
		fencegate.HeaderStatus+": "+f.proof(tok, g)+"\r\nContent-Length: 100\r\n\r\npartial")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Fatalf("a cut body was answered %d", resp.StatusCode)
		}
	}
	if f.back.count() != 0 {
		t.Fatal("a cut body was forwarded")
	}
	if rec, ok := f.record("doc/1"); ok {
		t.Fatalf("a cut body touched the store: %+v", rec)
	}
}

func TestPassThrough(t *testing.T) {
	f := newFixture(t)
	f.do(call{method: "GET", path: "/v1/docs/1"}).expect(t, 201, "") // reads pass untouched
	f.do(call{method: "DELETE", path: "/v1/off/1"}).expect(t, 201, "")
	if f.back.count() != 2 {
		t.Fatalf("backend calls %d", f.back.count())
	}
	g := newFixture(t, func(c *proxyConfig) { c.UnmatchedMutations = "pass" })
	g.do(call{method: "POST", path: "/v1/other/1"}).expect(t, 201, "")
}

// TestBusy: a second mutation waits for the first, then gets RESOURCE_BUSY
// with Retry-After when the first stays in flight.
func TestBusy(t *testing.T) {
	f := newFixture(t)
	tok, g := f.crafted("doc/1", "worker-a", 5)
	f.back.setMode("hang")
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		f.do(call{path: "/v1/docs/1", owner: "worker-a", grant: string(tok), status: f.proof(tok, g), body: "one"})
	}()
	deadline := time.Now().Add(5 * time.Second)
	for f.back.count() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	a := f.do(call{path: "/v1/docs/1", owner: "worker-a", grant: string(tok), status: f.proof(tok, g), seg: "2", body: "two"})
	a.expect(t, 503, fencegate.CodeResourceBusy)
	if a.header.Get("Retry-After") == "" {
		t.Fatal("RESOURCE_BUSY without Retry-After")
	}
	wg.Wait()
}

func TestShadowModeNeverRejects(t *testing.T) {
	f := newFixture(t)
	// Invalid grant: forwarded anyway, counted as would-reject.
	f.do(call{method: "POST", path: "/v1/shadow/1", owner: "worker-a", grant: "garbage", body: "x"}).expect(t, 201, "")
	// No grant at all.
	f.do(call{method: "POST", path: "/v1/shadow/1", owner: "worker-a", body: "y"}).expect(t, 201, "")
	// A valid one is forwarded and recorded with a receipt.
	tok, g := f.crafted("shadow/1", "worker-a", 5)
	a := f.do(call{method: "POST", path: "/v1/shadow/1", owner: "worker-a", grant: string(tok), status: f.proof(tok, g), body: "z"})
	a.expect(t, 201, "")
	if a.header.Get(fencegate.HeaderReceipt) == "" {
		t.Fatal("shadow mode did not record the valid mutation")
	}
	// A stale one (fence below 5) would be rejected: forwarded, counted.
	t4, g4 := f.crafted("shadow/1", "worker-a", 4)
	f.do(call{method: "POST", path: "/v1/shadow/1", owner: "worker-a", grant: string(t4), status: f.proof(t4, g4), body: "old"}).expect(t, 201, "")
	if f.back.count() != 4 {
		t.Fatalf("backend calls %d, want 4", f.back.count())
	}
	for code, want := range map[fencegate.Code]float64{fencegate.CodeGrantInvalid: 1, fencegate.CodeGrantRequired: 1, fencegate.CodeStaleOwner: 1} {
		if n := f.counter("fencegate_proxy_shadow_would_reject_total", "code", string(code)); n != want {
			t.Errorf("would-reject %s = %v, want %v", code, n, want)
		}
	}
	if rec, _ := f.record("shadow/1"); rec.HighestFence != 5 {
		t.Fatalf("the stale shadow write changed the record: %+v", rec)
	}
}

type proxyConfig = proxy.Config

func TestEnforcementLedger(t *testing.T) {
	f := newFixture(t)
	f.cfg.Routes[0].Mode = proxy.ModeShadow
	err := f.start(nil)
	if !errors.Is(err, proxy.ErrDowngrade) {
		t.Fatalf("downgrade of an enforced route: %v", err)
	}
	if err := f.start([]string{"PUT /v1/items/{id}"}); err != nil {
		t.Fatalf("forced downgrade: %v", err)
	}
	// Once forced down, going back to enforce is recorded again.
	f.cfg.Routes[0].Mode = proxy.ModeEnforce
	if err := f.start(nil); err != nil {
		t.Fatal(err)
	}
	f.cfg.Routes[0].Mode = proxy.ModeOff
	if err := f.start(nil); !errors.Is(err, proxy.ErrDowngrade) {
		t.Fatalf("off after enforce: %v", err)
	}
}

func TestTrustReloadKeepsKeysInUse(t *testing.T) {
	f := newFixture(t)
	tok, g := f.crafted("doc/1", "worker-a", 5)
	f.do(call{path: "/v1/docs/1", owner: "worker-a", grant: string(tok), status: f.proof(tok, g), body: "one"}).expect(t, 201, "")

	newKey := newIssuerKey(t)
	// Drop the old key: refused while its grant may still be held.
	writeBundle(t, f.cfg.Trust.Bundle, newKey)
	if _, err := f.proxy.ReloadTrust(false); !errors.Is(err, authn.ErrKeyInUse) {
		t.Fatalf("reload dropping a key in use: %v", err)
	}
	f.do(call{path: "/v1/docs/1", owner: "worker-a", grant: string(tok), status: f.proof(tok, g), seg: "2", body: "two"}).expect(t, 201, "")
	if n := f.counter("fencegate_proxy_trust_reloads_total", "result", "refused"); n != 1 {
		t.Fatalf("refused reloads %v", n)
	}
	// Old and new together: fine.
	writeBundle(t, f.cfg.Trust.Bundle, newKey, f.issuer.Key())
	if changed, err := f.proxy.ReloadTrust(false); err != nil || !changed {
		t.Fatalf("overlap reload: %v %v", changed, err)
	}
	// Forced: the old key goes, its grants are refused.
	writeBundle(t, f.cfg.Trust.Bundle, newKey)
	if _, err := f.proxy.ReloadTrust(true); err != nil {
		t.Fatal(err)
	}
	a := f.do(call{path: "/v1/docs/1", owner: "worker-a", grant: string(tok), status: f.proof(tok, g), seg: "3", body: "three"})
	a.expect(t, 401, fencegate.CodeGrantInvalid)
}
