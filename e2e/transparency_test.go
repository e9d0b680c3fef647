package e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
)

// The transparency rules checked here, for real clients other than Go's:
// the backend sees through the sidecar what it sees when the client talks
// to it directly, except for the documented additions; the client sees the
// backend's answer.
//
//   - request line: method, request target (the raw query byte for byte:
//     ';' and percent escapes as sent, in the order sent) and version;
//   - body, Content-Length and Transfer-Encoding;
//   - header fields: all of them, each with its values in order, but the
//     hop-by-hop fields (RFC 9110 7.6.1), Host (the client's Host is
//     preserved and checked on its own), the additions Fence-Token,
//     Fence-Resource, Fence-Operation-Root, Fence-Segment and
//     Fence-Operation-Id (checked on their own), the forwarding headers
//     (with no trusted proxy configured: X-Forwarded-For is the client's
//     address alone, X-Forwarded-Host the Host, X-Forwarded-Proto http, and
//     a client's Forwarded is removed, on both paths alike), and the grant
//     headers Fence-Grant and Fence-Status, which must NOT reach the
//     backend; nothing else is added (no User-Agent, no Content-Type, no
//     Accept-Encoding);
//   - the answer: status, body and the headers the backend sent, with no
//     Content-Type guessed for a body the backend left untyped;
//   - a replay answers from the receipt with the original's status, body
//     and headers (Content-Type and Content-Encoding among them), with
//     Fence-Replayed: true, and reaches nothing;
//   - Expect: 100-continue on a protected write is answered by the sidecar,
//     which needs the whole body before it forwards anything, and is not
//     forwarded (proxy/outbound/outbound.go): the backend gets the whole body with a
//     Content-Length, and the client the backend's answer.
//
// The reason phrase is the one known difference (proxy/reason_test.go).

// seenRequest is what the recording backend received.
type seenRequest struct {
	Method, URI, Proto, Host string
	Header                   http.Header
	Body                     []byte
	ContentLength            int64
	TransferEncoding         []string
}

// recorder is a legacy backend that records every request and answers
// with JSON: a GET 200 application/json; a PUT 201 application/json,
// gzip-encoded, with a Location. With plain=1 in its query it leaves the
// answer untyped and unencoded, as legacy services do.
type recorder struct {
	mu   sync.Mutex
	reqs []seenRequest
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.reqs = append(rc.reqs, seenRequest{Method: r.Method, URI: r.RequestURI, Proto: r.Proto, Host: r.Host,
		Header: r.Header.Clone(), Body: body, ContentLength: r.ContentLength, TransferEncoding: r.TransferEncoding})
	rc.mu.Unlock()
	answer, _ := json.Marshal(map[string]any{"method": r.Method, "target": r.RequestURI, "bodyBytes": len(body)})
	h := w.Header()
	h.Set("X-Backend", "legacy")
	h.Set("Cache-Control", "no-store")
	h.Set("ETag", `"e-`+strconv.Itoa(len(body))+`"`)
	plain := strings.Contains(r.URL.RawQuery, "plain=1")
	if plain {
		h["Content-Type"] = nil // no Content-Type, and none sniffed by this server
	} else {
		h.Set("Content-Type", "application/json")
	}
	status := http.StatusOK
	if r.Method == http.MethodPut {
		status = http.StatusCreated
		h.Set("Location", r.URL.Path)
		if !plain {
			var gz bytes.Buffer
			zw := gzip.NewWriter(&gz)
			zw.Write(answer)
			zw.Close()
			answer = gz.Bytes()
			h.Set("Content-Encoding", "gzip")
		}
	}
	h.Set("Content-Length", strconv.Itoa(len(answer)))
	w.WriteHeader(status)
	w.Write(answer)
}

func (rc *recorder) count() int { rc.mu.Lock(); defer rc.mu.Unlock(); return len(rc.reqs) }

// since returns the requests received after the first n.
func (rc *recorder) since(n int) []seenRequest {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.reqs[n:])
}

// clientRequest is one request a client sends; Header keeps order.
type clientRequest struct {
	Method string      `json:"method"`
	URL    string      `json:"url"`
	Header [][2]string `json:"headers"`
	Body   []byte      `json:"body"`
}

// clientResponse is the final answer as the client saw it.
type clientResponse struct {
	Status int
	Header http.Header
	Body   []byte
}

// httpClient is a real HTTP client program.
type httpClient struct {
	name string
	// noExpect says why the client cannot send Expect: 100-continue ("" if it can).
	noExpect string
	do       func(t *testing.T, r clientRequest) clientResponse
}

// pythonClient uses http.client, which sends the target as given and adds
// only Host, Accept-Encoding: identity and Content-Length (no User-Agent);
// it sends an Expect request's body without waiting and skips the 100.
const pythonClient = `
import base64, http.client, json, sys, urllib.parse
s = json.load(sys.stdin)
u = urllib.parse.urlsplit(s["url"])
c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
c.putrequest(s["method"], u.path + ("?" + u.query if u.query else ""))
body = base64.b64decode(s["body"]) if s["body"] else None
for k, v in s["headers"] or []:
    c.putheader(k, v)
if body is not None:
    c.putheader("Content-Length", str(len(body)))
c.endheaders(body)
r = c.getresponse()
print(json.dumps({"status": r.status, "headers": r.getheaders(), "body": base64.b64encode(r.read()).decode()}))
`

// nodeClient uses Node's built-in fetch (undici), which decodes gzip
// answers and refuses an Expect header.
const nodeClient = `
const s = JSON.parse(require("fs").readFileSync(0, "utf8"));
const init = {method: s.method, headers: s.headers || [], redirect: "manual"};
if (s.body) init.body = Buffer.from(s.body, "base64");
fetch(s.url, init).then(async (r) => {
  const b = Buffer.from(await r.arrayBuffer());
  console.log(JSON.stringify({status: r.status, headers: [...r.headers], body: b.toString("base64")}));
  process.exit(0); // undici's idle keep-alive socket would hold the process for seconds
}).catch((e) => { console.error(e, e.cause); process.exit(1); });
`

// scriptClient runs a program that reads a clientRequest as JSON on stdin
// and prints {status, headers: [[name, value]...], body: base64}.
func scriptClient(path string, args ...string) func(t *testing.T, r clientRequest) clientResponse {
	return func(t *testing.T, r clientRequest) clientResponse {
		t.Helper()
		in, _ := json.Marshal(r)
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, path, args...)
		cmd.Stdin = bytes.NewReader(in)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s %s %s: %v\n%s", path, r.Method, r.URL, err, stderr.String())
		}
		var res struct {
			Status  int         `json:"status"`
			Headers [][2]string `json:"headers"`
			Body    []byte      `json:"body"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("%s printed %q: %v", path, out, err)
		}
		cr := clientResponse{Status: res.Status, Header: http.Header{}, Body: res.Body}
		for _, kv := range res.Headers {
			cr.Header.Add(kv[0], kv[1])
		}
		return cr
	}
}

// curlClient runs curl; the final header block of --dump-header (after
// any 100 Continue) is the answer.
func curlClient(path string) func(t *testing.T, r clientRequest) clientResponse {
	return func(t *testing.T, r clientRequest) clientResponse {
		t.Helper()
		dir := t.TempDir()
		hdr, body := filepath.Join(dir, "h"), filepath.Join(dir, "b")
		args := []string{"-sS", "--http1.1", "-X", r.Method, "-D", hdr, "-o", body}
		for _, kv := range r.Header {
			args = append(args, "-H", kv[0]+": "+kv[1])
		}
		if r.Body != nil {
			in := filepath.Join(dir, "in")
			writeFile(t, in, string(r.Body))
			args = append(args, "--data-binary", "@"+in)
		}
		args = append(args, r.URL)
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if out, err := exec.CommandContext(ctx, path, args...).CombinedOutput(); err != nil {
			t.Fatalf("curl %v: %v\n%s", args, err, out)
		}
		raw, _ := os.ReadFile(hdr)
		blocks := strings.Split(strings.TrimSpace(string(raw)), "\r\n\r\n")
		tp := textproto.NewReader(bufioReader(blocks[len(blocks)-1] + "\r\n\r\n"))
		line, err := tp.ReadLine()
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			t.Fatalf("curl status line %q", line)
		}
		status, _ := strconv.Atoi(f[1])
		mh, err := tp.ReadMIMEHeader()
		if err != nil {
			t.Fatalf("curl headers %q: %v", blocks[len(blocks)-1], err)
		}
		b, _ := os.ReadFile(body)
		return clientResponse{Status: status, Header: http.Header(mh), Body: b}
	}
}

// clients finds curl, python3 and node; a missing one is skipped (CI
// installs them).
func clients() []httpClient {
	var out []httpClient
	if p, err := exec.LookPath("curl"); err == nil {
		out = append(out, httpClient{name: "curl", do: curlClient(p)})
	} else {
		out = append(out, httpClient{name: "curl"})
	}
	if p, err := exec.LookPath("python3"); err == nil {
		// A version manager's shim (pyenv) costs a second a run: use the
		// interpreter it resolves to.
		if exe, err := exec.Command(p, "-c", "import sys; print(sys.executable)").Output(); err == nil && len(bytes.TrimSpace(exe)) > 0 {
			p = string(bytes.TrimSpace(exe))
		}
		out = append(out, httpClient{name: "python", do: scriptClient(p, "-c", pythonClient)})
	} else {
		out = append(out, httpClient{name: "python"})
	}
	if p, err := exec.LookPath("node"); err == nil {
		out = append(out, httpClient{name: "node", noExpect: "Node's fetch refuses an Expect header (undici: expect header not supported)",
			do: scriptClient(p, "-e", nodeClient)})
	} else {
		out = append(out, httpClient{name: "node"})
	}
	return out
}

// hopByHop are per-connection fields (RFC 9110 7.6.1): a proxy may differ.
var hopByHop = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// sidecarAdds are the documented additions to a forwarded request.
var sidecarAdds = []string{"Fence-Token", "Fence-Resource", "Fence-Operation-Root", "Fence-Segment", "Fence-Operation-Id", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "Forwarded"}

// grantHeaders are what a client sends the sidecar and the backend must never see.
var grantHeaders = []string{"Fence-Grant", "Fence-Status"}

func without(h http.Header, names ...[]string) http.Header {
	h = h.Clone()
	for _, ns := range names {
		for _, n := range ns {
			h.Del(n)
		}
	}
	return h
}

// compareSeen reports how what the backend saw through the sidecar (via)
// differs from what it saw directly (direct).
func compareSeen(t *testing.T, direct, via seenRequest, handled ...string) {
	t.Helper()
	if via.Method != direct.Method || via.URI != direct.URI || via.Proto != direct.Proto {
		t.Errorf("request line: direct %q, through the sidecar %q", direct.Method+" "+direct.URI+" "+direct.Proto, via.Method+" "+via.URI+" "+via.Proto)
	}
	if !bytes.Equal(via.Body, direct.Body) || via.ContentLength != direct.ContentLength || !slices.Equal(via.TransferEncoding, direct.TransferEncoding) {
		t.Errorf("body: direct %d bytes (Content-Length %d, %v), through the sidecar %d bytes (Content-Length %d, %v)",
			len(direct.Body), direct.ContentLength, direct.TransferEncoding, len(via.Body), via.ContentLength, via.TransferEncoding)
	}
	for _, n := range grantHeaders {
		if v := via.Header.Values(n); len(v) > 0 {
			t.Errorf("the backend saw %s through the sidecar", n)
		}
	}
	d := without(direct.Header, hopByHop, sidecarAdds, grantHeaders, handled)
	v := without(via.Header, hopByHop, sidecarAdds, grantHeaders, handled)
	for _, n := range sortedKeys(d, v) {
		if !slices.Equal(d[n], v[n]) {
			t.Errorf("header %s: direct %q, through the sidecar %q", n, d[n], v[n])
		}
	}
}

func sortedKeys(hs ...http.Header) []string {
	var ks []string
	for _, h := range hs {
		for k := range h {
			if !slices.Contains(ks, k) {
				ks = append(ks, k)
			}
		}
	}
	slices.Sort(ks)
	return ks
}

// answerHeaders are the response fields compared between direct and
// sidecar answers (absent on both is equal).
var answerHeaders = []string{"Content-Type", "Content-Encoding", "Content-Length", "Cache-Control", "ETag", "Location", "X-Backend"}

func compareAnswer(t *testing.T, what string, want, got clientResponse) {
	t.Helper()
	if got.Status != want.Status {
		t.Errorf("%s: status %d, want %d", what, got.Status, want.Status)
	}
	if !bytes.Equal(got.Body, want.Body) {
		t.Errorf("%s: body %q, want %q", what, got.Body, want.Body)
	}
	for _, n := range answerHeaders {
		if w, g := want.Header.Values(n), got.Header.Values(n); !slices.Equal(w, g) {
			t.Errorf("%s: header %s %q, want %q", what, n, g, w)
		}
	}
}

// TestTransparencyRealClients sends the same requests from curl, Python
// and Node, directly to a recording backend and through the fencegate
// binary, and compares what the backend and the client saw.
func TestTransparencyRealClients(t *testing.T) {
	reg := startRegistry(t, "")
	back := &recorder{}
	bsrv := httptest.NewServer(back)
	defer bsrv.Close()
	sc := startSidecar(t, `
listen: LISTEN
admin: {listen: ADMIN}
backend: {url: "`+bsrv.URL+`", timeout: 5s}
routes:
  - {method: PUT, path: "/v1/items/{id}", resource: "item/{id}", status: {mode: registry}}
identity: {mode: insecure-header}
trust: {bundle: "`+filepath.Join(reg.dataDir, "keys", "jwks.json")+`"}
registry: {url: "`+reg.url+`"}
store: {backend: bolt, service: e2e-transparency, claimIdentity: sidecar}
dataDir: "`+t.TempDir()+`"
log: {level: warn}
`)
	sidecarHost := strings.TrimPrefix(sc.url, "http://")
	backendHost := strings.TrimPrefix(bsrv.URL, "http://")
	const identityHeader = "X-Fencegate-Identity"

	for _, cl := range clients() {
		t.Run(cl.name, func(t *testing.T) {
			if cl.do == nil {
				t.Skipf("%s is not installed: this client's transparency is not checked here (CI installs it)", cl.name)
			}
			owner := "worker-" + cl.name
			rc, _ := client.New(reg.url, client.WithIdentityHeader(identityHeader, owner))
			lease, err := rc.Acquire(context.Background(), client.AcquireRequest{Resource: "item/" + cl.name, RequestID: "transparency-" + cl.name, TTL: time.Minute})
			if err != nil {
				t.Fatal(err)
			}

			// both sends r to the backend, then through the sidecar, and
			// returns what each saw.
			both := func(t *testing.T, r clientRequest) (direct, via seenRequest, dAns, vAns clientResponse) {
				t.Helper()
				n := back.count()
				r.URL = bsrv.URL + r.URL
				dAns = cl.do(t, r)
				r.URL = sc.url + strings.TrimPrefix(r.URL, bsrv.URL)
				vAns = cl.do(t, r)
				got := back.since(n)
				if len(got) != 2 {
					t.Fatalf("the backend saw %d requests, want 2 (one direct, one through the sidecar): %+v", len(got), got)
				}
				direct, via = got[0], got[1]
				if direct.Host != backendHost || via.Host != sidecarHost {
					t.Errorf("Host: direct %q (want %q), through the sidecar %q (want the client's %q)", direct.Host, backendHost, via.Host, sidecarHost)
				}
				for n, want := range map[string]string{"X-Forwarded-For": "127.0.0.1", "X-Forwarded-Host": sidecarHost, "X-Forwarded-Proto": "http"} {
					if got := via.Header.Values(n); len(got) != 1 || got[0] != want {
						t.Errorf("the backend saw %s %q, want %q", n, got, want)
					}
				}
				if got := via.Header.Values("Forwarded"); len(got) != 0 {
					t.Errorf("the backend saw the untrusted client's Forwarded %q", got)
				}
				return
			}
			fenceAdds := func(t *testing.T, via seenRequest, seq string) {
				t.Helper()
				root := via.Header.Get("Fence-Operation-Root")
				for n, want := range map[string]string{"Fence-Token": strconv.FormatUint(lease.FenceToken, 10), "Fence-Resource": "item/" + cl.name,
					"Fence-Segment": seq, "Fence-Operation-Id": root + "/" + seq} {
					if got := via.Header.Values(n); root == "" || len(got) != 1 || got[0] != want {
						t.Errorf("the backend saw %s %q, want %q (root %q)", n, got, want, root)
					}
				}
			}

			t.Run("read with ; and % escapes in the query", func(t *testing.T) {
				target := "/v1/items/" + cl.name + "?z=1;y=2&b=%2f%3B&a=x+y&c=%E2%82%AC&e"
				direct, via, dAns, vAns := both(t, clientRequest{Method: "GET", URL: target,
					Header: [][2]string{{"Accept", "application/json"}, {"X-Trace", "a;b, c"}, {"X-Forwarded-For", "203.0.113.9"}, {"Forwarded", "for=203.0.113.9"}}})
				if direct.URI != target {
					t.Fatalf("%s itself sent %q, not %q: fix the test's target", cl.name, direct.URI, target)
				}
				compareSeen(t, direct, via)
				compareAnswer(t, "answer", dAns, vAns)
			})

			t.Run("body-less GET with an untyped answer", func(t *testing.T) {
				direct, via, dAns, vAns := both(t, clientRequest{Method: "GET", URL: "/v1/items/" + cl.name + "?plain=1"})
				compareSeen(t, direct, via)
				if v, ok := via.Header["Content-Type"]; ok {
					t.Errorf("the backend saw Content-Type %q on a body-less GET", v)
				}
				compareAnswer(t, "answer", dAns, vAns)
				if v, ok := vAns.Header["Content-Type"]; ok {
					t.Errorf("the client saw Content-Type %q the backend never sent (guessed)", v)
				}
			})

			body := []byte(`{"v":1,"who":"` + cl.name + `"}`)
			sum := sha256.Sum256(body)
			put := clientRequest{Method: "PUT", URL: "/v1/items/" + cl.name + "?mode=a;b&x=%2f", Body: body, Header: [][2]string{
				{identityHeader, owner}, {"Fence-Grant", lease.Grant}, {"Fence-Segment", "1"},
				{"Content-Type", "application/json"}, {"Accept", "application/json"}, {"X-Request-Id", "req-" + cl.name},
				{"X-Forwarded-For", "203.0.113.9"}, {"Forwarded", "for=203.0.113.9"},
				{"Content-Digest", "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"},
			}}
			var first clientResponse
			t.Run("protected PUT with Fence-Grant", func(t *testing.T) {
				direct, via, dAns, vAns := both(t, put)
				first = vAns
				compareSeen(t, direct, via)
				fenceAdds(t, via, "1")
				compareAnswer(t, "answer", dAns, vAns)
				if vAns.Header.Get("Fence-Receipt") == "" {
					t.Errorf("no Fence-Receipt on the forwarded write: %v", vAns.Header)
				}
			})

			t.Run("replay of the PUT", func(t *testing.T) {
				if first.Status == 0 {
					t.Skip("the PUT failed")
				}
				n := back.count()
				r := put
				r.URL = sc.url + r.URL
				again := cl.do(t, r)
				if got := back.count() - n; got != 0 {
					t.Errorf("the replay reached the backend %d times", got)
				}
				compareAnswer(t, "replay", first, again)
				if again.Header.Get("Fence-Replayed") != "true" || again.Header.Get("Fence-Receipt") != first.Header.Get("Fence-Receipt") {
					t.Errorf("replay headers: Fence-Replayed %q, Fence-Receipt %q (first %q)",
						again.Header.Get("Fence-Replayed"), again.Header.Get("Fence-Receipt"), first.Header.Get("Fence-Receipt"))
				}
			})

			t.Run("PUT with Expect: 100-continue", func(t *testing.T) {
				if cl.noExpect != "" {
					t.Skip(cl.noExpect)
				}
				big := []byte(`{"pad":"` + strings.Repeat("x", 4096) + `"}`)
				r := clientRequest{Method: "PUT", URL: "/v1/items/" + cl.name + "?plain=1", Body: big, Header: [][2]string{
					{identityHeader, owner}, {"Fence-Grant", lease.Grant}, {"Fence-Segment", "2"},
					{"Content-Type", "application/json"}, {"Expect", "100-continue"},
				}}
				direct, via, dAns, vAns := both(t, r)
				if got := direct.Header.Get("Expect"); got != "100-continue" {
					t.Fatalf("%s itself did not send Expect: 100-continue (the backend saw %q)", cl.name, got)
				}
				if got := via.Header.Values("Expect"); len(got) != 0 {
					t.Errorf("the backend saw Expect %q through the sidecar, which already took the whole body", got)
				}
				compareSeen(t, direct, via, "Expect")
				fenceAdds(t, via, "2")
				compareAnswer(t, "answer", dAns, vAns)
				if v, ok := vAns.Header["Content-Type"]; ok {
					t.Errorf("the client saw Content-Type %q the backend never sent (guessed)", v)
				}
			})
		})
	}
}

func bufioReader(s string) *bufio.Reader { return bufio.NewReader(strings.NewReader(s)) }
