package proxy_test

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/proxy"
)

// The sidecar is transparent on the forwarding path: for the same request
// sent directly to a recording backend and through the sidecar (as a read
// and as a protected write), the backend receives the same request line,
// headers and body, and the client the same answer, but for what
// proxy/outbound (outbound.go, forwarded.go) documents.

// received is what the recording backend saw of one request.
type received struct {
	method, uri, proto, host string
	header, trailer          http.Header
	contentLength            int64
	transferEncoding         []string
	body                     string
}

// recorder is a backend that records every request it receives and
// answers with its script (by default: 200, text/plain, an echo).
type recorder struct {
	mu     sync.Mutex
	got    []received
	answer http.HandlerFunc
	srv    *httptest.Server
}

func newRecorder(t *testing.T) *recorder {
	rec := &recorder{}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.got = append(rec.got, received{method: r.Method, uri: r.RequestURI, proto: r.Proto, host: r.Host,
			header: r.Header.Clone(), trailer: r.Trailer.Clone(), contentLength: r.ContentLength,
			transferEncoding: r.TransferEncoding, body: string(body)})
		h := rec.answer
		rec.mu.Unlock()
		if h != nil {
			h(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("X-Backend", "legacy")
		w.Header().Add("X-Multi", "one")
		w.Header().Add("X-Multi", "two")
		io.WriteString(w, "got "+r.Method+" "+r.RequestURI+" "+string(body))
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

func (rec *recorder) set(h http.HandlerFunc) { rec.mu.Lock(); rec.answer = h; rec.mu.Unlock() }
func (rec *recorder) addr() string           { return strings.TrimPrefix(rec.srv.URL, "http://") }

// take returns the one request received since the last take.
func (rec *recorder) take(t *testing.T) received {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.got) != 1 {
		t.Fatalf("the backend received %d requests, want 1", len(rec.got))
	}
	r := rec.got[0]
	rec.got = nil
	return r
}

// rawReq is an HTTP/1.x request written byte for byte, as curl or any
// other client may send it (no header added behind the test's back).
type rawReq struct {
	method, target, proto string // proto: HTTP/1.1 when empty
	header                [][2]string
	body                  string
	chunked               bool
	trailer               [][2]string
}

func (r rawReq) wire() string {
	proto := r.proto
	if proto == "" {
		proto = "HTTP/1.1"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s\r\n", r.method, r.target, proto)
	for _, h := range r.header {
		fmt.Fprintf(&b, "%s: %s\r\n", h[0], h[1])
	}
	if r.chunked {
		b.WriteString("Transfer-Encoding: chunked\r\n\r\n")
		if r.body != "" {
			fmt.Fprintf(&b, "%x\r\n%s\r\n", len(r.body), r.body)
		}
		b.WriteString("0\r\n")
		for _, h := range r.trailer {
			fmt.Fprintf(&b, "%s: %s\r\n", h[0], h[1])
		}
		b.WriteString("\r\n")
		return b.String()
	}
	switch r.method {
	case "PUT", "POST", "PATCH": // as curl: a Content-Length for these, and for a body
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(r.body))
	default:
		if r.body != "" {
			fmt.Fprintf(&b, "Content-Length: %d\r\n", len(r.body))
		}
	}
	b.WriteString("\r\n" + r.body)
	return b.String()
}

// with returns r with more header fields.
func (r rawReq) with(h ...[2]string) rawReq {
	r.header = append(slices.Clone(r.header), h...)
	return r
}

// got is what a client received.
type got struct {
	status int
	header http.Header
	body   string
}

// exchange sends r on a new connection to addr and reads the answer.
func exchange(t *testing.T, addr string, r rawReq) got {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, r.wire()); err != nil {
		t.Fatal(err)
	}
	return readAnswer(t, bufio.NewReader(conn), r.method)
}

func readAnswer(t *testing.T, br *bufio.Reader, method string) got {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	return got{status: resp.StatusCode, header: resp.Header, body: string(body)}
}

// sidecarAddr is the sidecar's listen address.
func (f *fixture) sidecarAddr() string { return strings.TrimPrefix(f.srv.URL, "http://") }

var writeSeq atomic.Int64

// writeTo makes r a protected write: PUT /v1/items/{id}+query with a fresh
// lease's grant and the caller's identity (a new resource per call).
func (f *fixture) writeTo(r rawReq, id, query string) rawReq {
	f.t.Helper()
	if id == "" {
		id = "t" + strconv.FormatInt(writeSeq.Add(1), 10)
	}
	resource := "item/" + id
	if strings.Contains(id, "%") {
		resource = "item/" + strings.ReplaceAll(strings.ReplaceAll(id, "%7e", "~"), "%40", "@")
	}
	l := f.acquire("worker-a", resource)
	r.method, r.target = "PUT", "/v1/items/"+id+query
	return r.with([2]string{fencegate.HeaderGrant, string(l.Grant)}, [2]string{idHeader, "worker-a"})
}

// fenceAdded are the headers the sidecar adds to a protected write.
var fenceAdded = []string{fencegate.HeaderToken, fencegate.HeaderResource, fencegate.HeaderRoot, fencegate.HeaderSegment, fencegate.HeaderOperationID}

// forwardingHeaders are set by the forwarded rule (compared separately).
var forwardingHeaders = []string{"X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host", "Forwarded"}

// hopByHop removes the hop-by-hop fields from h (those Connection names too).
func hopByHop(h http.Header, keepTrailers bool) {
	te := h.Values("Te")
	for _, v := range h.Values("Connection") {
		for _, f := range strings.Split(v, ",") {
			h.Del(strings.TrimSpace(f))
		}
	}
	for _, k := range []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"} {
		h.Del(k)
	}
	if keepTrailers {
		for _, v := range te {
			for _, f := range strings.Split(v, ",") {
				if strings.EqualFold(strings.TrimSpace(f), "trailers") {
					h.Set("Te", "trailers")
				}
			}
		}
	}
}

// wantForwarded is the rule of ForwardedConfig, restated: what the backend
// must receive of the forwarding headers for a request whose own were
// sent, from 127.0.0.1, with Host host.
func wantForwarded(sent http.Header, host string, trusted, tls bool) http.Header {
	proto := "http"
	if tls {
		proto = "https"
	}
	w := http.Header{}
	if !trusted {
		w.Set("X-Forwarded-For", "127.0.0.1")
		w.Set("X-Forwarded-Proto", proto)
		if host != "" {
			w.Set("X-Forwarded-Host", host)
		}
		return w
	}
	xff := "127.0.0.1"
	if prior := sent.Values("X-Forwarded-For"); len(prior) > 0 {
		xff = strings.Join(prior, ", ") + ", " + xff
	}
	w.Set("X-Forwarded-For", xff)
	for _, k := range []string{"X-Forwarded-Proto", "X-Forwarded-Host", "Forwarded"} {
		if v := sent.Values(k); len(v) > 0 {
			w[k] = v
		}
	}
	if w.Get("X-Forwarded-Proto") == "" {
		w.Set("X-Forwarded-Proto", proto)
	}
	if w.Get("X-Forwarded-Host") == "" && host != "" {
		w.Set("X-Forwarded-Host", host)
	}
	return w
}

// pick returns the named fields of h (absent ones left out).
func pick(h http.Header, names ...string) http.Header {
	out := http.Header{}
	for _, n := range names {
		if v := h.Values(n); len(v) > 0 {
			out[http.CanonicalHeaderKey(n)] = v
		}
	}
	return out
}

func without(h http.Header, names ...string) http.Header {
	out := h.Clone()
	if out == nil {
		out = http.Header{}
	}
	for _, n := range names {
		out.Del(n)
	}
	for k := range out {
		if strings.HasPrefix(k, "Fence-") {
			delete(out, k)
		}
	}
	return out
}

func headerDiff(want, have http.Header) string {
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	for k := range have {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var diffs []string
	for _, k := range keys {
		if !reflect.DeepEqual(want[k], have[k]) {
			diffs = append(diffs, fmt.Sprintf("%s: want %q, have %q", k, want[k], have[k]))
		}
	}
	return strings.Join(diffs, "; ")
}

// compared is the outcome of one comparison: what the backend received
// and the client got, directly and through the sidecar.
type compared struct {
	direct, via     received
	directAns, ans  got
	trusted, tlsVia bool
}

// compare sends r to the recording backend directly, then to the sidecar
// at addr, and fails on any difference the documentation does not name:
//   - both paths: hop-by-hop fields removed (a read keeps "TE: trailers"),
//     the forwarding headers by the rule (wantForwarded), the client's
//     Fence-* headers never forwarded, the identity header ignored;
//   - a protected write: the fence headers added, no Expect, the body
//     with a Content-Length (a chunked one de-chunked, its trailers
//     dropped);
//   - the answer: the same status, headers (but Date, Fence-Receipt and
//     the backend's hop-by-hop fields) and body.
func compare(t *testing.T, rec *recorder, addr string, r rawReq, write, trusted bool) compared {
	t.Helper()
	var c compared
	c.trusted = trusted
	c.directAns = exchange(t, rec.addr(), r)
	c.direct = rec.take(t)
	c.ans = exchange(t, addr, r)
	if write && c.ans.header.Get(fencegate.HeaderReceipt) == "" {
		t.Fatalf("%s %s: the write was not forwarded: %d %s", r.method, r.target, c.ans.status, c.ans.body)
	}
	c.via = rec.take(t)
	c.check(t, r, write)
	return c
}

func (c compared) check(t *testing.T, r rawReq, write bool) {
	t.Helper()
	d, v := c.direct, c.via
	name := r.method + " " + r.target
	if d.method != v.method || d.uri != v.uri || d.host != v.host || d.body != v.body {
		t.Errorf("%s: the backend received %s %q (Host %q) body %q directly, %s %q (Host %q) body %q through the sidecar",
			name, d.method, d.uri, d.host, d.body, v.method, v.uri, v.host, v.body)
	}
	want := without(d.header, idHeader, "Expect")
	if !write {
		if e := d.header.Values("Expect"); len(e) > 0 {
			want["Expect"] = e // reads stream the body: the backend may answer 100 Continue itself
		}
	}
	hopByHop(want, !write)
	for _, k := range forwardingHeaders {
		want.Del(k)
	}
	switch {
	case write && d.transferEncoding != nil:
		// The write's body is in hand: sent with its length.
		want.Set("Content-Length", strconv.Itoa(len(d.body)))
	case d.body == "" && d.transferEncoding == nil:
		// Go's client sends Content-Length: 0 for an empty body on
		// POST, PUT and PATCH only, whatever the client sent.
		if d.method == "POST" || d.method == "PUT" || d.method == "PATCH" {
			want.Set("Content-Length", "0")
		} else {
			want.Del("Content-Length")
		}
	}
	have := without(v.header, append([]string{idHeader}, forwardingHeaders...)...)
	if diff := headerDiff(want, have); diff != "" {
		t.Errorf("%s: backend headers differ: %s", name, diff)
	}
	if (d.transferEncoding != nil) != (v.transferEncoding != nil) && !write {
		t.Errorf("%s: a read's body framing changed: %v directly, %v through the sidecar", name, d.transferEncoding, v.transferEncoding)
	}
	// Request trailers reach no backend through the sidecar (neither path
	// forwards them, as httputil.ReverseProxy does not).
	if len(v.trailer) > 0 {
		for k, vs := range v.trailer {
			if len(vs) > 0 {
				t.Errorf("%s: the backend received the trailer %s: %q", name, k, vs)
			}
		}
	}
	if diff := headerDiff(wantForwarded(d.header, d.host, c.trusted, c.tlsVia), pick(v.header, forwardingHeaders...)); diff != "" {
		t.Errorf("%s: forwarding headers not by the rule: %s", name, diff)
	}
	var fence []string
	for k := range v.header {
		if strings.HasPrefix(k, "Fence-") {
			fence = append(fence, k)
		}
	}
	sort.Strings(fence)
	wantFence := []string{}
	if write {
		wantFence = slices.Clone(fenceAdded)
		sort.Strings(wantFence)
	}
	if strings.Join(fence, ",") != strings.Join(wantFence, ",") {
		t.Errorf("%s: the backend received the fence headers %v, want %v", name, fence, wantFence)
	}
	// The answer.
	da, a := c.directAns, c.ans
	wantAns := without(da.header, "Date")
	hopByHop(wantAns, false)
	if da.status != a.status || da.body != a.body {
		t.Errorf("%s: the client got %d %q directly, %d %q through the sidecar", name, da.status, da.body, a.status, a.body)
	}
	if diff := headerDiff(wantAns, without(a.header, "Date")); diff != "" {
		t.Errorf("%s: answer headers differ: %s", name, diff)
	}
}

// base is a request as curl would send it, without a User-Agent.
func base(method, target, body string) rawReq {
	return rawReq{method: method, target: target, body: body, header: [][2]string{{"Host", "app.test"}, {"Accept", "*/*"}}}
}

// TestTransparentTarget (issue 14 item 1): the request target reaches the
// backend byte for byte on reads and on protected writes: a query with
// ';', repeated and empty parameters, a malformed '%' escape, a bare '?',
// and escaped paths (%2F, %20, %7e, a '"').
func TestTransparentTarget(t *testing.T) {
	rec := newRecorder(t)
	f := newFixture(t, withBackend(rec.srv.URL))
	queries := []string{"?title=a;b", "?_limit=2&sig=k1;k2", "?a=%zz&b=1", "?q=%", "?x=1&&x=2&", "?", "?a+b=c%20d&e=%2F"}
	for _, q := range queries {
		compare(t, rec, f.sidecarAddr(), base("GET", "/posts"+q, ""), false, false)
		compare(t, rec, f.sidecarAddr(), f.writeTo(base("", "", "payload"), "", q), true, false)
	}
	for _, path := range []string{"/a%2Fb", "/a%20b", "/a%7eb", "/a%2fb%2F", `/a"b`, "/a;p=1/b", "/x/..%2F..%2Fy", "//double/slash"} {
		compare(t, rec, f.sidecarAddr(), base("GET", path+"?k=v;w", ""), false, false)
	}
	for _, id := range []string{"a%7eb", "a%40b"} {
		compare(t, rec, f.sidecarAddr(), f.writeTo(base("", "", "payload"), id, "?title=a;b"), true, false)
	}
}

// TestTransparentHeaders (issue 14 items 7b and the review of what each
// path adds): a request without User-Agent or Accept-Encoding, with
// repeated and custom fields, a client hop-by-hop field named by
// Connection, TE: trailers, a chunked body with trailers, and Via, reaches
// the backend alike on both paths; the client gets the same answer.
func TestTransparentHeaders(t *testing.T) {
	rec := newRecorder(t)
	f := newFixture(t, withBackend(rec.srv.URL))
	addr := f.sidecarAddr()
	plain := base("", "", "{\"a\":1}").with([2]string{"Content-Type", "application/json"},
		[2]string{"X-Custom", "one"}, [2]string{"X-Custom", "two"}, [2]string{"Cookie", "a=1"}, [2]string{"Via", "1.1 edge"},
		[2]string{"Authorization", "Bearer t"})
	hop := plain.with([2]string{"Connection", "X-Client-Hop"}, [2]string{"X-Client-Hop", "1"}, [2]string{"Keep-Alive", "timeout=5"})
	te := plain.with([2]string{"TE", "trailers"})
	chunked := plain.with([2]string{"Trailer", "X-Sum"})
	chunked.chunked, chunked.trailer = true, [][2]string{{"X-Sum", "42"}}
	for _, r := range []rawReq{plain, hop, te, chunked} {
		read := r
		read.method, read.target = "DELETE", "/v1/off/1"
		compare(t, rec, addr, read, false, false) // mode off: the pass-through
		get := r
		get.method, get.target, get.body, get.chunked = "GET", "/posts/1", "", false
		compare(t, rec, addr, get, false, false)
		w := compare(t, rec, addr, f.writeTo(r, "", ""), true, false)
		if ua := w.via.header.Values("User-Agent"); len(ua) != 0 {
			t.Fatalf("a write without User-Agent reached the backend with %q", ua)
		}
		if ae := w.via.header.Values("Accept-Encoding"); len(ae) != 0 {
			t.Fatalf("a write without Accept-Encoding reached the backend with %q", ae)
		}
	}
	// A body-less DELETE, a GET with Content-Length: 0, and an answer
	// without Content-Type (none is sniffed on either path).
	compare(t, rec, addr, base("DELETE", "/v1/off/2", ""), false, false)
	compare(t, rec, addr, base("GET", "/zero", "").with([2]string{"Content-Length", "0"}), false, false)
	rec.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = nil
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "<html><body>untyped</body></html>")
	})
	compare(t, rec, addr, base("GET", "/untyped", ""), false, false)
	compare(t, rec, addr, f.writeTo(base("", "", "x"), "", ""), true, false)
	rec.set(nil)
	// A client's own User-Agent passes unchanged on both paths.
	ua := plain.with([2]string{"User-Agent", "curl/8.5.0"})
	ua.method, ua.target = "GET", "/posts/1"
	compare(t, rec, addr, ua, false, false)
	compare(t, rec, addr, f.writeTo(ua, "", ""), true, false)
}

// forwardingSent are forwarding headers an ingress (or a forger) sends.
var forwardingSent = [][2]string{
	{"X-Forwarded-For", "203.0.113.7"}, {"X-Forwarded-For", "198.51.100.2"},
	{"X-Forwarded-Proto", "https"}, {"X-Forwarded-Host", "public.example"},
	{"Forwarded", "for=203.0.113.7;proto=https;host=public.example"},
}

// TestForwardedUntrusted (issue 14 item 5): from a peer that is not a
// trusted proxy (no forwarded.trustedProxies), reads and writes alike give
// the backend X-Forwarded-For = the peer, X-Forwarded-Proto from the
// sidecar's own listener (http here, https on TLS), X-Forwarded-Host = the
// Host, and no Forwarded.
func TestForwardedUntrusted(t *testing.T) {
	rec := newRecorder(t)
	f := newFixture(t, withBackend(rec.srv.URL))
	sent := base("", "", "body").with(forwardingSent...)
	read := sent
	read.method, read.target = "GET", "/posts"
	r := compare(t, rec, f.sidecarAddr(), read, false, false)
	w := compare(t, rec, f.sidecarAddr(), f.writeTo(sent, "", ""), true, false)
	for _, c := range []compared{r, w} {
		if got := pick(c.via.header, forwardingHeaders...); got.Get("X-Forwarded-For") != "127.0.0.1" || got.Get("X-Forwarded-Proto") != "http" ||
			got.Get("X-Forwarded-Host") != "app.test" || got.Get("Forwarded") != "" {
			t.Fatalf("untrusted peer: %v", got)
		}
	}

	// Through a TLS listener: X-Forwarded-Proto is https on both paths.
	ts := httptest.NewTLSServer(f.proxy)
	t.Cleanup(ts.Close)
	tlsExchange := func(r rawReq) received {
		t.Helper()
		conn, err := tls.Dial("tcp", strings.TrimPrefix(ts.URL, "https://"), &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		io.WriteString(conn, r.wire())
		readAnswer(t, bufio.NewReader(conn), r.method)
		return rec.take(t)
	}
	for _, r := range []rawReq{read, f.writeTo(sent, "", "")} {
		got := pick(tlsExchange(r).header, forwardingHeaders...)
		if got.Get("X-Forwarded-For") != "127.0.0.1" || got.Get("X-Forwarded-Proto") != "https" || got.Get("X-Forwarded-Host") != "app.test" || got.Get("Forwarded") != "" {
			t.Fatalf("untrusted peer over TLS, %s: %v", r.method, got)
		}
	}
}

// TestForwardedTrusted (issue 14 item 5): from a trusted proxy, reads and
// writes alike keep its X-Forwarded-Proto, X-Forwarded-Host and Forwarded
// and append the peer to its X-Forwarded-For; what it did not send is set
// from the sidecar's own view.
func TestForwardedTrusted(t *testing.T) {
	rec := newRecorder(t)
	f := newFixture(t, withBackend(rec.srv.URL), func(c *proxy.Config) {
		c.Forwarded.TrustedProxies = []string{"192.0.2.0/24", "127.0.0.0/8"}
	})
	sent := base("", "", "body").with(forwardingSent...)
	read := sent
	read.method, read.target = "GET", "/posts"
	r := compare(t, rec, f.sidecarAddr(), read, false, true)
	w := compare(t, rec, f.sidecarAddr(), f.writeTo(sent, "", ""), true, true)
	for _, c := range []compared{r, w} {
		got := pick(c.via.header, forwardingHeaders...)
		if got.Get("X-Forwarded-For") != "203.0.113.7, 198.51.100.2, 127.0.0.1" || got.Get("X-Forwarded-Proto") != "https" ||
			got.Get("X-Forwarded-Host") != "public.example" || got.Get("Forwarded") != "for=203.0.113.7;proto=https;host=public.example" {
			t.Fatalf("trusted peer: %v", got)
		}
	}
	// A trusted proxy that sends none: the sidecar's own view, like an untrusted peer.
	bare := base("GET", "/posts", "")
	c := compare(t, rec, f.sidecarAddr(), bare, false, true)
	if got := pick(c.via.header, forwardingHeaders...); got.Get("X-Forwarded-For") != "127.0.0.1" || got.Get("X-Forwarded-Proto") != "http" || got.Get("X-Forwarded-Host") != "app.test" {
		t.Fatalf("trusted peer without forwarding headers: %v", got)
	}
	compare(t, rec, f.sidecarAddr(), f.writeTo(base("", "", "x"), "", ""), true, true)
}

// TestForwardedConfigValidated: forwarded.trustedProxies holds CIDRs.
func TestForwardedConfigValidated(t *testing.T) {
	f := newFixture(t)
	cfg := f.cfg
	cfg.SetDefaults()
	cfg.Forwarded.TrustedProxies = []string{"10.0.0.0/8", "not-a-cidr", "10.1.2.3", "::1/128"}
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), `forwarded.trustedProxies[1]: "not-a-cidr"`) || !strings.Contains(err.Error(), `forwarded.trustedProxies[2]: "10.1.2.3"`) ||
		strings.Count(err.Error(), "\n") != 1 {
		t.Fatalf("want exactly the errors of entries 1 and 2: %v", err)
	}
	if _, err := proxy.New(proxy.Options{Config: cfg, Store: f.store}); err == nil {
		t.Fatal("New accepted a bad CIDR")
	}
}

// TestExpectContinue (issue 14 item 6): a protected write with Expect:
// 100-continue gets its 100 Continue from the sidecar, which then has the
// whole body: the backend receives no Expect (one that never answers 100
// would otherwise delay every such write). A read streams its body: the
// Expect reaches the backend, and the client gets its 100 Continue once
// the backend answered its own (one 100: TestOneContinue).
func TestExpectContinue(t *testing.T) {
	rec := newRecorder(t)
	f := newFixture(t, withBackend(rec.srv.URL))
	// continued sends r's head, waits for 100 Continue, then sends the body.
	continued := func(addr string, r rawReq) got {
		t.Helper()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		wire := r.wire()
		head, body, _ := strings.Cut(wire, "\r\n\r\n")
		io.WriteString(conn, head+"\r\n\r\n")
		br := bufio.NewReader(conn)
		if interim := readAnswer(t, br, r.method); interim.status != http.StatusContinue {
			t.Fatalf("%s %s: want 100 Continue before the body, got %d %q", r.method, r.target, interim.status, interim.body)
		}
		io.WriteString(conn, body)
		return readAnswer(t, br, r.method)
	}
	expect := base("", "", "the body").with([2]string{"Expect", "100-continue"})

	w := f.writeTo(expect, "", "")
	directAns := continued(rec.addr(), w)
	direct := rec.take(t)
	if direct.header.Get("Expect") != "100-continue" {
		t.Fatalf("the direct request lost its Expect: %v", direct.header)
	}
	ans := continued(f.sidecarAddr(), w)
	via := rec.take(t)
	if e := via.header.Values("Expect"); len(e) != 0 {
		t.Fatalf("a protected write reached the backend with Expect %q after the sidecar read its body", e)
	}
	compared{direct: direct, via: via, directAns: directAns, ans: ans}.check(t, w, true)

	read := expect
	read.method, read.target = "DELETE", "/v1/off/1"
	directAns = continued(rec.addr(), read)
	direct = rec.take(t)
	ans = continued(f.sidecarAddr(), read)
	via = rec.take(t)
	if via.header.Get("Expect") != "100-continue" || via.body != "the body" {
		t.Fatalf("a pass-through must keep Expect and stream the body: %v %q", via.header, via.body)
	}
	compared{direct: direct, via: via, directAns: directAns, ans: ans}.check(t, read, false)
}

// TestOneContinue: a client of a pass-through with Expect: 100-continue
// gets one 100 Continue, whatever the order of the two that could reach
// it. Here the backend reads the body late: the sidecar's forward stops
// waiting for the backend's 100 (ExpectContinueTimeout) and reads the
// client's body, which sends the client its 100; the client sends the
// body; only then does the backend read it, and answer its own 100,
// which the sidecar must not relay as a second one.
func TestOneContinue(t *testing.T) {
	bodySent := make(chan struct{})
	back := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-bodySent
		body, _ := io.ReadAll(r.Body) // sends the backend's 100 Continue
		io.WriteString(w, "got "+string(body))
	}))
	defer back.Close()
	f := newFixture(t, withBackend(back.URL), func(c *proxy.Config) { c.Backend.Timeout = 10 * time.Second })
	conn, err := net.Dial("tcp", f.sidecarAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "DELETE /v1/off/1 HTTP/1.1\r\nHost: svc\r\nExpect: 100-continue\r\nContent-Length: 8\r\n\r\n")
	br := bufio.NewReader(conn)
	if interim := readAnswer(t, br, "DELETE"); interim.status != http.StatusContinue {
		t.Fatalf("want 100 Continue before the body, got %d %q", interim.status, interim.body)
	}
	io.WriteString(conn, "the body")
	close(bodySent)
	if final := readAnswer(t, br, "DELETE"); final.status != http.StatusOK || final.body != "got the body" {
		t.Fatalf("after the body: %d %q, want 200 \"got the body\" (a second 100 Continue is not the answer)", final.status, final.body)
	}
}

// TestConnectionNamedResponseHeaders (issue 14 item 7a): a response field
// the backend names in its Connection header is hop-by-hop: neither a read
// nor a write passes it to the client, and a replay from the receipt does
// not either.
func TestConnectionNamedResponseHeaders(t *testing.T) {
	rec := newRecorder(t)
	f := newFixture(t, withBackend(rec.srv.URL))
	rec.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "X-Hop, Cache-Control")
		w.Header().Set("X-Hop", "secret")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Keep-Alive", "timeout=5")
		w.Header().Set("X-Keep", "yes")
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "answer")
	})
	read := compare(t, rec, f.sidecarAddr(), base("GET", "/posts", ""), false, false)
	if read.directAns.header.Get("X-Hop") != "secret" {
		t.Fatalf("the backend must send X-Hop directly (the test's premise): %v", read.directAns.header)
	}
	wr := f.writeTo(base("", "", "x"), "", "")
	write := compare(t, rec, f.sidecarAddr(), wr, true, false)
	for _, a := range []got{read.ans, write.ans} {
		if a.header.Get("X-Hop") != "" || a.header.Get("Cache-Control") != "" || a.header.Get("Keep-Alive") != "" || a.header.Get("X-Keep") != "yes" {
			t.Fatalf("hop-by-hop response fields reached the client: %v", a.header)
		}
	}
	replay := exchange(t, f.sidecarAddr(), wr)
	if replay.header.Get(fencegate.HeaderReplayed) != "true" {
		t.Fatalf("want a replay: %d %v %q", replay.status, replay.header, replay.body)
	}
	if replay.header.Get("X-Hop") != "" || replay.header.Get("Cache-Control") != "" || replay.header.Get("Keep-Alive") != "" {
		t.Fatalf("a replay carried hop-by-hop response fields: %v", replay.header)
	}
}
