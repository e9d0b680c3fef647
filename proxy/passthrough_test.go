package proxy_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/proxy"
)

// streamer is a backend whose answer sends "first", then waits for release,
// then sends "second" (a long-streaming answer).
type streamer struct {
	started chan struct{}
	release chan struct{}
}

func newStreamer() *streamer {
	return &streamer{started: make(chan struct{}, 4), release: make(chan struct{})}
}

func (s *streamer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, "first")
	http.NewResponseController(w).Flush()
	s.started <- struct{}{}
	select {
	case <-s.release:
	case <-r.Context().Done():
		return
	}
	io.WriteString(w, "second")
}

// withWriteTimeout serves the fixture's sidecar from an http.Server with
// writeTimeout, as proxy/server does with server.writeTimeout.
func (f *fixture) withWriteTimeout(d time.Duration) string {
	srv := httptest.NewUnstartedServer(f.proxy)
	srv.Config.WriteTimeout = d
	srv.Start()
	f.t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// streamed sends r to addr, waits until the backend has sent "first" and
// then past the write timeout d, lets the backend finish, and returns the
// answer's body as the client got it (and the error that cut it, if any).
func streamed(t *testing.T, addr string, r rawReq, s *streamer, d time.Duration) (string, error) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, r.wire())
	<-s.started
	// Not a timed assertion: the scenario needs the write deadline passed.
	time.Sleep(4 * d)
	close(s.release)
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: r.method})
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

// TestPassThroughNotBoundByWriteTimeout (issue 14 item 7d): a read that
// streams longer than server.writeTimeout is not cut mid-body; with
// server.passWriteTimeout set, it is bounded by that instead.
func TestPassThroughNotBoundByWriteTimeout(t *testing.T) {
	const d = 50 * time.Millisecond
	s := newStreamer()
	back := httptest.NewServer(s)
	t.Cleanup(back.Close)
	f := newFixture(t, withBackend(back.URL))
	addr := f.withWriteTimeout(d)
	body, err := streamed(t, addr, base("GET", "/feed", ""), s, d)
	if err != nil || body != "firstsecond" {
		t.Fatalf("a read streaming past server.writeTimeout was cut: %q, %v", body, err)
	}

	s = newStreamer()
	back2 := httptest.NewServer(s)
	t.Cleanup(back2.Close)
	f = newFixture(t, withBackend(back2.URL), func(c *proxy.Config) { c.PassWriteTimeout = d })
	addr = f.withWriteTimeout(time.Hour)
	if body, err := streamed(t, addr, base("GET", "/feed", ""), s, d); err == nil && body == "firstsecond" {
		t.Fatal("a read streaming past server.passWriteTimeout was not cut")
	}
}

// TestWriteStaysBoundByWriteTimeout: a protected write's answer is still
// bounded by server.writeTimeout (only the pass-through is lifted). This
// guards the fix of item 7d; it passes on the code before it too.
func TestWriteStaysBoundByWriteTimeout(t *testing.T) {
	const d = 50 * time.Millisecond
	s := newStreamer()
	back := httptest.NewServer(s)
	t.Cleanup(back.Close)
	f := newFixture(t, withBackend(back.URL), func(c *proxy.Config) {
		c.Backend.Timeout = time.Minute
		c.Backend.MaxResponseBytes = 5 // "first" is buffered, "second" streams after
	})
	addr := f.withWriteTimeout(d)
	if body, err := streamed(t, addr, f.writeTo(base("", "", "x"), "", ""), s, d); err == nil && body == "firstsecond" {
		t.Fatal("a protected write's answer streamed past server.writeTimeout")
	}
}

// TestHTTP10AndPipelining (issue 14 item 7e): HTTP/1.0 clients and
// pipelined HTTP/1.1 clients work on both paths. The backend always gets
// HTTP/1.1 from the sidecar; an HTTP/1.0 request without Host reaches it
// with the backend's own address as Host.
func TestHTTP10AndPipelining(t *testing.T) {
	rec := newRecorder(t)
	f := newFixture(t, withBackend(rec.srv.URL))
	addr := f.sidecarAddr()

	// HTTP/1.0, with Host, both paths (the backend sees HTTP/1.1).
	get10 := base("GET", "/posts?title=a", "")
	get10.proto = "HTTP/1.0"
	c := compare(t, rec, addr, get10, false, false)
	if c.direct.proto != "HTTP/1.0" || c.via.proto != "HTTP/1.1" || c.ans.status != http.StatusOK {
		t.Fatalf("protocols: %s directly, %s through the sidecar (%d)", c.direct.proto, c.via.proto, c.ans.status)
	}
	put10 := f.writeTo(base("", "", "ten"), "", "?v=1")
	put10.proto = "HTTP/1.0"
	a := exchange(t, addr, put10)
	via := rec.take(t)
	if a.status != http.StatusOK || a.header.Get(fencegate.HeaderReceipt) == "" || a.body != "got PUT "+put10.target+" ten" ||
		via.uri != put10.target || via.body != "ten" || via.host != "app.test" {
		t.Fatalf("HTTP/1.0 write: %d %q, backend %q Host %q body %q", a.status, a.body, via.uri, via.host, via.body)
	}

	// HTTP/1.0 without Host, both paths.
	bare := rawReq{method: "GET", target: "/posts", proto: "HTTP/1.0"}
	a = exchange(t, addr, bare)
	via = rec.take(t)
	if a.status != http.StatusOK || via.uri != "/posts" || via.host != rec.addr() {
		t.Fatalf("HTTP/1.0 read without Host: %d %q, backend %q Host %q", a.status, a.body, via.uri, via.host)
	}
	bareWrite := f.writeTo(rawReq{body: "nohost"}, "", "")
	bareWrite.proto = "HTTP/1.0"
	a = exchange(t, addr, bareWrite)
	via = rec.take(t)
	if a.header.Get(fencegate.HeaderReceipt) == "" || via.body != "nohost" || via.host != rec.addr() {
		t.Fatalf("HTTP/1.0 write without Host: %d %q, backend Host %q body %q", a.status, a.body, via.host, via.body)
	}

	// Pipelined: a read, a write, a read on one connection, sent at once.
	reqs := []rawReq{base("GET", "/one?x=1", ""), f.writeTo(base("", "", "two"), "", "?y=2"), base("GET", "/three", "")}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var all strings.Builder
	for _, r := range reqs {
		all.WriteString(r.wire())
	}
	io.WriteString(conn, all.String())
	br := bufio.NewReader(conn)
	for i, r := range reqs {
		a := readAnswer(t, br, r.method)
		want := "got " + r.method + " " + r.target + " " + r.body
		if a.status != http.StatusOK || a.body != want {
			t.Fatalf("pipelined answer %d: %d %q, want %q", i, a.status, a.body, want)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.got) != 3 || rec.got[0].uri != reqs[0].target || rec.got[1].uri != reqs[1].target || rec.got[2].uri != reqs[2].target {
		t.Fatalf("the backend received %d pipelined requests: %+v", len(rec.got), rec.got)
	}
}
