package proxy_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/proxy"
)

// rawBackend answers every request, over raw TCP, with the status line
// "HTTP/1.1 200 Fine": a reason phrase net/http would never write.
func rawBackend(t *testing.T) (addr string, count func() int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	n := 0
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, req.Body)
					mu.Lock()
					n++
					mu.Unlock()
					if _, err := io.WriteString(c, "HTTP/1.1 200 Fine\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n\r\nfine"); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		// The sidecar keeps its backend connections idle: end them, so
		// neither side's goroutines outlive the test.
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String(), func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// statusLine sends raw over a new TCP connection to addr and returns the
// response's status line.
func statusLine(t *testing.T, addr, raw string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the status line: %v", err)
	}
	return strings.TrimRight(line, "\r\n")
}

// TestReasonPhraseIsStandard documents a known, intended difference: the
// sidecar answers with net/http's server, which always writes the standard
// reason phrase for the status code, so a backend's custom phrase
// ("200 Fine") reaches the client as "200 OK", on the read path, on a
// forwarded write and on a replay. RFC 9110 section 15 says clients should
// ignore the reason phrase, and HTTP/2 has none; nothing of the status is
// lost. If this test fails, the sidecar started passing phrases through:
// update the README's transparency notes.
func TestReasonPhraseIsStandard(t *testing.T) {
	addr, count := rawBackend(t)
	f := newFixture(t, func(c *proxy.Config) { c.Backend.URL = "http://" + addr })
	sidecar := strings.TrimPrefix(f.srv.URL, "http://")

	if got := statusLine(t, addr, "GET /r HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); got != "HTTP/1.1 200 Fine" {
		t.Fatalf("the raw backend itself answers %q", got)
	}
	if got := statusLine(t, sidecar, "GET /r HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); got != "HTTP/1.1 200 OK" {
		t.Fatalf("read path: %q", got)
	}
	l := f.acquire("worker-a", "item/1")
	put := "PUT /v1/items/1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + idHeader + ": worker-a\r\n" +
		fencegate.HeaderGrant + ": " + string(l.Grant) + "\r\nContent-Length: 2\r\n\r\nv1"
	if got := statusLine(t, sidecar, put); got != "HTTP/1.1 200 OK" {
		t.Fatalf("forwarded write: %q", got)
	}
	if got := statusLine(t, sidecar, put); got != "HTTP/1.1 200 OK" {
		t.Fatalf("replayed write: %q", got)
	}
	if n := count(); n != 3 { // the direct GET, the read, the write; not the replay
		t.Fatalf("the backend saw %d requests, want 3", n)
	}
}
