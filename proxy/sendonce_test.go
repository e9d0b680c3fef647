package proxy_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/proxy"
)

// rawRequest is one request the raw backend read off the wire.
type rawRequest struct {
	conn, index   int // which connection, and the request's place on it (1, 2, ...)
	method, path  string
	header        http.Header
	contentLength int64
	chunked       bool
	body          string
	cut           bool // applied, then the connection closed without an answer
}

// cutBackend is an HTTP/1.1 backend on a raw TCP listener: it applies
// (records) every request it reads whole, answers the first request of
// each connection with 200 and keeps the connection open, and, when cut
// is set, closes the connection on its second request after applying it,
// without a byte of answer: the answer to a write that took effect is
// lost on a connection the sidecar's transport had reused.
type cutBackend struct {
	ln  net.Listener
	cut bool

	mu    sync.Mutex
	conns int
	open  map[net.Conn]bool
	reqs  []rawRequest
	wg    sync.WaitGroup
}

func newCutBackend(t *testing.T, cut bool) *cutBackend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &cutBackend{ln: ln, cut: cut, open: map[net.Conn]bool{}}
	b.wg.Add(1)
	go b.accept()
	t.Cleanup(func() {
		ln.Close()
		b.mu.Lock()
		for c := range b.open {
			c.Close() // the sidecar's idle connections
		}
		b.mu.Unlock()
		b.wg.Wait()
	})
	return b
}

func (b *cutBackend) url() string { return "http://" + b.ln.Addr().String() }

func (b *cutBackend) accept() {
	defer b.wg.Done()
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		b.conns++
		n := b.conns
		b.open[c] = true
		b.mu.Unlock()
		b.wg.Add(1)
		go b.serve(c, n)
	}
}

func (b *cutBackend) serve(c net.Conn, conn int) {
	defer b.wg.Done()
	defer func() {
		c.Close()
		b.mu.Lock()
		delete(b.open, c)
		b.mu.Unlock()
	}()
	br := bufio.NewReader(c)
	for index := 1; ; index++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return // a body cut off is no write
		}
		r := rawRequest{conn: conn, index: index, method: req.Method, path: req.URL.RequestURI(), header: req.Header,
			contentLength: req.ContentLength, chunked: len(req.TransferEncoding) > 0, body: string(body), cut: b.cut && index == 2}
		b.mu.Lock()
		b.reqs = append(b.reqs, r)
		b.mu.Unlock()
		if r.cut {
			return // applied; the answer is lost with the connection
		}
		answer := "applied " + req.Method + " " + string(body)
		if _, err := fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", len(answer), answer); err != nil {
			return
		}
	}
}

// applied returns the requests received for path, in order.
func (b *cutBackend) applied(path string) []rawRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []rawRequest
	for _, r := range b.reqs {
		if r.path == path {
			out = append(out, r)
		}
	}
	return out
}

// sentOnceRoutes are the routes of the sent-once tests: writes with and
// without idempotencyKey, PUT and an empty-bodied DELETE, and a route in
// mode off; unmatched mutations pass.
func sentOnceRoutes(backendURL string) fixtureOpt {
	return func(c *proxy.Config) {
		c.Backend.URL = backendURL
		c.UnmatchedMutations = "pass"
		c.Routes = []proxy.RouteConfig{
			{Method: "PUT", Path: "/v1/items/{id}", Resource: "item/{id}", Status: proxy.RouteStatus{Mode: proxy.StatusRegistry}},
			{Method: "DELETE", Path: "/v1/items/{id}", Resource: "item/{id}", Status: proxy.RouteStatus{Mode: proxy.StatusRegistry}},
			{Method: "PUT", Path: "/v1/keyed/{id}", Resource: "keyed/{id}", Status: proxy.RouteStatus{Mode: proxy.StatusRegistry}, IdempotencyKey: true},
			{Method: "DELETE", Path: "/v1/keyed/{id}", Resource: "keyed/{id}", Status: proxy.RouteStatus{Mode: proxy.StatusRegistry}, IdempotencyKey: true},
			{Method: "DELETE", Path: "/v1/off/{id}", Resource: "off/{id}", Mode: proxy.ModeOff},
		}
	}
}

// sentOnceCase is one mutation of the sent-once tests.
type sentOnceCase struct {
	name, method, path, body string
	resource                 string // protected: the lease's resource; "" for a passed mutation
	clientKey                bool   // the client sends its own Idempotency-Key
}

var sentOnceCases = []sentOnceCase{
	{name: "client Idempotency-Key on a route without idempotencyKey", method: "PUT", path: "/v1/items/1", body: "s2", resource: "item/1", clientKey: true},
	{name: "idempotencyKey route", method: "PUT", path: "/v1/keyed/1", body: "s2", resource: "keyed/1"},
	{name: "empty DELETE on an idempotencyKey route", method: "DELETE", path: "/v1/keyed/2", resource: "keyed/2"},
	{name: "empty DELETE with a client Idempotency-Key", method: "DELETE", path: "/v1/items/3", resource: "item/3", clientKey: true},
	{name: "passed: empty DELETE on an off route with a client Idempotency-Key", method: "DELETE", path: "/v1/off/1", clientKey: true},
	{name: "passed: unmatched POST with a body and a client Idempotency-Key", method: "POST", path: "/v1/unmatched/1", body: "p", clientKey: true},
	{name: "passed: unmatched empty POST with a client Idempotency-Key", method: "POST", path: "/v1/unmatched/2", clientKey: true},
	{name: "passed: unmatched empty PATCH with X-Idempotency-Key", method: "PATCH", path: "/v1/unmatched/3"},
}

func (c sentOnceCase) call(f *fixture) call {
	cl := call{method: c.method, path: c.path, body: c.body, hdr: http.Header{}}
	if c.clientKey {
		cl.hdr.Set("Idempotency-Key", "client-key-1")
	}
	if c.method == "PATCH" {
		cl.hdr.Set("X-Idempotency-Key", "client-key-2")
	}
	if c.resource != "" {
		l := f.acquire("worker-a", c.resource)
		cl.owner, cl.grant = "worker-a", string(l.Grant)
	}
	return cl
}

// TestForwardedMutationIsSentOnce (issue 19, story 4): the backend applies
// a mutation that arrived on a reused keep-alive connection and closes the
// connection without answering. Go's transport resends a request it takes
// for replayable (an Idempotency-Key header, and a body it can rewind or
// none) on a new connection: the backend then holds the write twice while
// the client got 200 and one receipt. Every forwarded mutation, protected
// or passed unchecked, whatever headers it carries, must be sent once:
// the backend applies it once, a protected write answers 504
// MUTATION_UNKNOWN and a passed one 502 BACKEND_UNAVAILABLE.
func TestForwardedMutationIsSentOnce(t *testing.T) {
	for _, c := range sentOnceCases {
		t.Run(c.name, func(t *testing.T) {
			back := newCutBackend(t, true)
			f := newFixture(t, sentOnceRoutes(back.url()))
			// A read opens the sidecar's connection to the backend and
			// leaves it idle for the mutation to reuse.
			f.do(call{method: "GET", path: "/warm"}).expect(t, 200, "")
			got := f.do(c.call(f))
			applied := back.applied(c.path)
			if len(applied) == 0 || applied[0].index != 2 {
				t.Fatalf("the mutation did not arrive on the reused connection: %+v", applied)
			}
			if len(applied) != 1 {
				t.Errorf("the backend applied the mutation %d times, want once: %+v", len(applied), applied)
			}
			if c.resource != "" {
				got.expect(t, 504, fencegate.CodeMutationUnknown)
			} else {
				got.expect(t, 502, fencegate.CodeBackendUnavailable)
			}
		})
	}
}

// TestEmptyMutationFraming: an empty-bodied mutation goes out framed as Go's
// client frames it and as it went before the sent-once rule: Content-Length:
// 0 on POST, PUT and PATCH, no Content-Length on DELETE, never chunked; its
// Idempotency-Key (the client's, or the sidecar's on an idempotencyKey
// route) arrives with its value.
func TestEmptyMutationFraming(t *testing.T) {
	back := newCutBackend(t, false)
	f := newFixture(t, sentOnceRoutes(back.url()))
	cases := []struct {
		sentOnceCase
		wantLength bool // a Content-Length: 0 field
	}{
		{sentOnceCase{method: "DELETE", path: "/v1/keyed/5", resource: "keyed/5"}, false},
		{sentOnceCase{method: "DELETE", path: "/v1/items/5", resource: "item/5", clientKey: true}, false},
		{sentOnceCase{method: "PUT", path: "/v1/keyed/6", resource: "keyed/6"}, true},
		{sentOnceCase{method: "PUT", path: "/v1/items/6", resource: "item/6", clientKey: true}, true},
		{sentOnceCase{method: "DELETE", path: "/v1/off/5", clientKey: true}, false},
		{sentOnceCase{method: "POST", path: "/v1/unmatched/5", clientKey: true}, true},
		{sentOnceCase{method: "PATCH", path: "/v1/unmatched/6"}, true},
	}
	for _, c := range cases {
		cl := c.call(f)
		f.do(cl).expect(t, 200, "")
		reqs := back.applied(c.path)
		if len(reqs) != 1 {
			t.Fatalf("%s %s: the backend got %d requests", c.method, c.path, len(reqs))
		}
		r := reqs[0]
		_, hasLength := r.header["Content-Length"]
		if r.chunked || r.body != "" || hasLength != c.wantLength || (hasLength && r.header.Get("Content-Length") != "0") {
			t.Errorf("%s %s: chunked %v, Content-Length %q (present %v), body %q; want Content-Length: 0 %v, not chunked, no body",
				c.method, c.path, r.chunked, r.header.Get("Content-Length"), hasLength, r.body, c.wantLength)
		}
		var wantKey string
		switch {
		case strings.HasPrefix(c.path, "/v1/keyed/"):
			wantKey = "" // the operation ID: checked below
		case c.clientKey:
			wantKey = "client-key-1"
		}
		if strings.HasPrefix(c.path, "/v1/keyed/") {
			if k := r.header.Get("Idempotency-Key"); k == "" || k != r.header.Get(fencegate.HeaderOperationID) {
				t.Errorf("%s %s: Idempotency-Key %q, want the operation ID %q", c.method, c.path, k, r.header.Get(fencegate.HeaderOperationID))
			}
		} else if got := r.header.Get("Idempotency-Key"); got != wantKey {
			t.Errorf("%s %s: Idempotency-Key %q, want %q", c.method, c.path, got, wantKey)
		}
		if c.method == "PATCH" && r.header.Get("X-Idempotency-Key") != "client-key-2" {
			t.Errorf("%s %s: X-Idempotency-Key %q, want the client's", c.method, c.path, r.header.Get("X-Idempotency-Key"))
		}
		if n := len(r.header.Values("Idempotency-Key")); n > 1 {
			t.Errorf("%s %s: %d Idempotency-Key values", c.method, c.path, n)
		}
	}
}
