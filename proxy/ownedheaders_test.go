package proxy_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/proxy"
)

// cgiName is the meta-variable a CGI, WSGI or Rack gateway gives a request
// header: HTTP_ and the name in uppercase, '-' and '.' as '_' (RFC 3875
// 4.1.18; Rack and PHP map '.' too).
func cgiName(name string) string {
	b := []byte(strings.ToUpper(name))
	for i, c := range b {
		if c == '-' || c == '.' {
			b[i] = '_'
		}
	}
	return "HTTP_" + string(b)
}

// cgiEnv is what such a gateway hands the application for h: every value
// under its variable, in the order the names sort (a gateway keeps one,
// chosen by an order the client controls).
func cgiEnv(h http.Header) map[string][]string {
	env := map[string][]string{}
	for k, vs := range h {
		env[cgiName(k)] = append(env[cgiName(k)], vs...)
	}
	return env
}

// forgedSpellings are client headers in the sidecar's namespace spelled as
// gateways fold them: '_' or '.' for '-', any case, names the sidecar sets
// and names it does not (yet).
var forgedSpellings = []string{
	"Fence_Token", "fence_token", "FENCE_TOKEN", "Fence.Token", "fence.token", "Fence_token", "fence-token",
	"Fence_Resource", "Fence.Resource", "Fence_Operation_Id", "Fence_Operation.Id", "Fence.Operation-Root",
	"Fence_Operation_Root", "Fence_Segment", "Fence_Receipt", "Fence.Replayed", "Fence_Lease", "Fence.Status",
	"Fence_Future_Field", "Fence__Token", "FENCE.TOKEN",
}

// keptSpellings look alike but are not in the namespace (no "fence-"
// after folding): they are the client's and reach the backend.
var keptSpellings = []string{"FenceToken", "Fence", "X-Fence-Token", "Fence~Token", "Fences-Token"}

func forgedHeader() http.Header {
	h := http.Header{}
	for i, k := range forgedSpellings {
		h[k] = []string{"forged-" + strconv.Itoa(i)} // written on the wire as spelled
	}
	for _, k := range keptSpellings {
		h[k] = []string{"kept"}
	}
	return h
}

// wantOnlySidecarFence fails unless the backend's request got, for every
// CGI variable in the sidecar's namespace, exactly the sidecar's value
// (want; nil: none at all), and every look-alike the client sent
// (keptSpellings) as it was.
func wantOnlySidecarFence(t *testing.T, what string, got http.Header, want map[string]string) {
	t.Helper()
	env := cgiEnv(got)
	for v, vals := range env {
		if !strings.HasPrefix(v, "HTTP_FENCE_") {
			continue
		}
		w, ok := want[v]
		if !ok || len(vals) != 1 || vals[0] != w {
			t.Errorf("%s: %s = %q, want only the sidecar's %q (set %v)", what, v, vals, w, ok)
		}
	}
	for v, w := range want {
		if vals := env[v]; len(vals) != 1 || vals[0] != w {
			t.Errorf("%s: %s = %q, want %q", what, v, vals, w)
		}
	}
	for _, k := range keptSpellings {
		if vals := got[http.CanonicalHeaderKey(k)]; len(vals) != 1 || vals[0] != "kept" {
			t.Errorf("%s: the client's %s was not forwarded as it was: %q", what, k, vals)
		}
	}
}

// sidecarFence is the CGI view of the fence headers the sidecar sets for
// segment 1 of grant.
func sidecarFence(t *testing.T, grant []byte, resource string) map[string]string {
	t.Helper()
	g, err := client.GrantClaims(string(grant))
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"HTTP_FENCE_TOKEN":          strconv.FormatUint(g.FenceToken, 10),
		"HTTP_FENCE_RESOURCE":       resource,
		"HTTP_FENCE_OPERATION_ROOT": g.OperationRoot,
		"HTTP_FENCE_SEGMENT":        "1",
		"HTTP_FENCE_OPERATION_ID":   fencegate.OperationID(g.OperationRoot, 1),
	}
}

// TestClientFenceSpellingsNeverReachTheBackend (issue 19, story 6): a
// client header whose name folds (case, '_' and '.' as '-') to a Fence-*
// name is removed from every request, read, protected write or mutation
// passed unchecked: a gateway that maps Fence_Token and Fence-Token to the
// same HTTP_FENCE_TOKEN sees only the sidecar's value, or none.
func TestClientFenceSpellingsNeverReachTheBackend(t *testing.T) {
	f := newFixture(t, func(c *proxy.Config) { c.UnmatchedMutations = "pass" })
	f.do(call{method: "GET", path: "/v1/items/1", hdr: forgedHeader()}).expect(t, 201, "")
	wantOnlySidecarFence(t, "read", f.back.last().Header, nil)

	a := f.acquire("worker-a", "item/1")
	f.do(call{path: "/v1/items/1", owner: "worker-a", grant: string(a.Grant), body: "x", hdr: forgedHeader()}).expect(t, 201, "")
	wantOnlySidecarFence(t, "protected write", f.back.last().Header, sidecarFence(t, a.Grant, "item/1"))

	f.do(call{method: "DELETE", path: "/v1/off/1", hdr: forgedHeader()}).expect(t, 201, "")
	wantOnlySidecarFence(t, "mutation on an off route", f.back.last().Header, nil)
	f.do(call{method: "POST", path: "/v1/unmatched/1", body: "y", hdr: forgedHeader()}).expect(t, 201, "")
	wantOnlySidecarFence(t, "unmatched mutation passed", f.back.last().Header, nil)
}

// TestClientIdempotencyKeySpellingsOnAnIdempotencyKeyRoute: where the
// sidecar sets Idempotency-Key, every spelling of it the client sent is
// removed: the backend's HTTP_IDEMPOTENCY_KEY is the operation ID alone.
// Elsewhere the client's own key is its business and passes.
func TestClientIdempotencyKeySpellingsOnAnIdempotencyKeyRoute(t *testing.T) {
	f := newFixture(t)
	spellings := http.Header{"Idempotency_Key": {"c1"}, "idempotency.key": {"c2"}, "IDEMPOTENCY_KEY": {"c3"}, "Idempotency.Key": {"c4"}, "Idempotency-Key": {"c5"}}
	token, g := f.crafted("doc/1", "worker-a", 1)
	f.do(call{path: "/v1/docs/1", owner: "worker-a", grant: string(token), status: f.proof(token, g), body: "x", hdr: spellings.Clone()}).expect(t, 201, "")
	env := cgiEnv(f.back.last().Header)
	if got, want := env["HTTP_IDEMPOTENCY_KEY"], fencegate.OperationID(g.OperationRoot, 1); len(got) != 1 || got[0] != want {
		t.Errorf("idempotencyKey route: HTTP_IDEMPOTENCY_KEY = %q, want only the operation ID %q", got, want)
	}

	a := f.acquire("worker-a", "item/2")
	f.do(call{path: "/v1/items/2", owner: "worker-a", grant: string(a.Grant), body: "x", hdr: spellings.Clone()}).expect(t, 201, "")
	if got := cgiEnv(f.back.last().Header)["HTTP_IDEMPOTENCY_KEY"]; len(got) != len(spellings) {
		t.Errorf("route without idempotencyKey: HTTP_IDEMPOTENCY_KEY = %q, want the client's %d values", got, len(spellings))
	}
}

// TestGrantIsReadOnlyFromItsCanonicalName: a grant sent as Fence_Grant (or
// Fence.Grant) is not a grant: GRANT_REQUIRED, nothing forwarded.
func TestGrantIsReadOnlyFromItsCanonicalName(t *testing.T) {
	f := newFixture(t)
	a := f.acquire("worker-a", "item/1")
	for _, name := range []string{"Fence_Grant", "Fence.Grant", "fence_grant"} {
		n := f.back.count()
		f.do(call{path: "/v1/items/1", owner: "worker-a", body: "x", hdr: http.Header{name: {string(a.Grant)}}}).expect(t, 428, fencegate.CodeGrantRequired)
		if f.back.count() != n {
			t.Fatalf("%s: the write reached the backend", name)
		}
	}
}

// TestClientFenceTrailersNeverReachTheBackend: request trailers are not
// forwarded, so a Fence-* field (any spelling) cannot arrive as one, nor be
// announced in a Trailer header.
func TestClientFenceTrailersNeverReachTheBackend(t *testing.T) {
	f := newFixture(t, func(c *proxy.Config) { c.UnmatchedMutations = "pass" })
	for _, method := range []string{"POST", "GET"} {
		pr, pw := io.Pipe()
		req, _ := http.NewRequest(method, f.srv.URL+"/v1/unmatched/t", pr)
		req.Header = forgedHeader()
		req.Trailer = http.Header{"Fence-Token": nil, "Fence_Token": nil, "Fence.Resource": nil}
		go func() {
			io.WriteString(pw, "body")
			req.Trailer["Fence-Token"] = []string{"999"}
			req.Trailer["Fence_Token"] = []string{"998"}
			req.Trailer["Fence.Resource"] = []string{"other"}
			pw.Close()
		}()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		got := f.back.last()
		if len(got.Trailer) != 0 || got.Header.Get("Trailer") != "" {
			t.Errorf("%s: trailers reached the backend: %v (Trailer: %q)", method, got.Trailer, got.Header.Get("Trailer"))
		}
		wantOnlySidecarFence(t, method+" with trailers", got.Header, nil)
	}
}

// TestClientFenceSpellingsOverHTTP2: over HTTP/2 names arrive in
// lowercase (fence_token); they are removed as well.
func TestClientFenceSpellingsOverHTTP2(t *testing.T) {
	f := newFixture(t)
	srv := httptest.NewUnstartedServer(f.proxy)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	c := srv.Client()
	a := f.acquire("worker-a", "item/1")
	for _, method := range []string{"GET", "PUT"} {
		req, _ := http.NewRequest(method, srv.URL+"/v1/items/1", strings.NewReader("x"))
		req.Header = forgedHeader()
		want := map[string]string(nil)
		if method == "PUT" {
			req.Header.Set(idHeader, "worker-a")
			req.Header.Set(fencegate.HeaderGrant, string(a.Grant))
			want = sidecarFence(t, a.Grant, "item/1")
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.ProtoMajor != 2 || resp.StatusCode != 201 {
			t.Fatalf("%s: %s %d, want HTTP/2 201", method, resp.Proto, resp.StatusCode)
		}
		wantOnlySidecarFence(t, method+" over HTTP/2", f.back.last().Header, want)
	}
}

// TestNonTokenHeaderNamesAreRefused: the name normaliser folds ASCII only;
// that is enough because the sidecar's server refuses any name that is
// not an RFC 9110 token (400) before it is routed, so no spelling with a
// character a gateway might fold into 'i', 'k' or 's' (ı, K, ſ) gets in.
func TestNonTokenHeaderNamesAreRefused(t *testing.T) {
	f := newFixture(t)
	for _, name := range []string{"\u0131dempotency-Key", "Fence-To\u212aen", "Fence-\u017fegment", "Fence Token"} {
		c, err := net.Dial("tcp", f.srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "GET /v1/items/1 HTTP/1.1\r\nHost: app\r\n"+name+": 1\r\nConnection: close\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		c.Close()
		if resp.StatusCode != 400 {
			t.Errorf("%q: %d, want 400", name, resp.StatusCode)
		}
	}
}

// forgingBackend answers every request with fields in the sidecar's
// namespace, spelled as gateways fold them, beside one of its own.
func forgingBackend(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		for i, k := range []string{"Fence-Receipt", "Fence_Receipt", "fence.receipt", "Fence-Replayed", "Fence.Replayed", "Fence_Token", "Fence-Future"} {
			w.Header()[k] = []string{"forged-" + strconv.Itoa(i)} // written as spelled
		}
		w.Header().Set("X-Backend", "legacy")
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, "stored")
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// answerFence returns the answer's fields in the sidecar's namespace, by
// folded name, failing on any value the backend forged.
func answerFence(t *testing.T, what string, h http.Header) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for k, vs := range h {
		v := cgiName(k)
		if !strings.HasPrefix(v, "HTTP_FENCE_") {
			continue
		}
		out[v] = append(out[v], vs...)
		for _, s := range vs {
			if strings.HasPrefix(s, "forged-") {
				t.Errorf("%s: the backend's %s: %s reached the client", what, k, s)
			}
		}
	}
	if h.Get("X-Backend") != "legacy" {
		t.Errorf("%s: the backend's own X-Backend was lost", what)
	}
	return out
}

// TestBackendFenceSpellingsNeverReachTheClientOfAMutation: the answer to
// a mutation carries Fence-Receipt (and Fence-Replayed) from the sidecar
// only: a backend's Fence_Receipt, fence.receipt or Fence.Replayed is
// removed from a protected write's answer, from its receipt (the replay)
// and from the answer to a mutation passed unchecked, which carries no
// receipt at all. A read's answer is the backend's, as it is.
func TestBackendFenceSpellingsNeverReachTheClientOfAMutation(t *testing.T) {
	back := forgingBackend(t)
	f := newFixture(t, func(c *proxy.Config) { c.Backend.URL = back; c.UnmatchedMutations = "pass" })
	a := f.acquire("worker-a", "item/1")
	w := call{path: "/v1/items/1", owner: "worker-a", grant: string(a.Grant), body: "x"}
	first := f.do(w)
	first.expect(t, 201, "")
	fence := answerFence(t, "protected write", first.header)
	if r := fence["HTTP_FENCE_RECEIPT"]; len(fence) != 1 || len(r) != 1 || r[0] == "" {
		t.Errorf("protected write: the answer's Fence-* fields are %v, want the sidecar's Fence-Receipt alone", fence)
	}
	replay := f.do(w)
	replay.expect(t, 201, "")
	fence = answerFence(t, "replay", replay.header)
	if len(fence) != 2 || len(fence["HTTP_FENCE_REPLAYED"]) != 1 || replay.header.Get(fencegate.HeaderReplayed) != "true" ||
		len(fence["HTTP_FENCE_RECEIPT"]) != 1 || replay.header.Get(fencegate.HeaderReceipt) != first.header.Get(fencegate.HeaderReceipt) {
		t.Errorf("replay: the answer's Fence-* fields are %v, want the sidecar's Fence-Receipt and Fence-Replayed: true alone", fence)
	}
	for _, c := range []call{{method: "DELETE", path: "/v1/off/1"}, {method: "POST", path: "/v1/unmatched/1", body: "y"}} {
		got := f.do(c)
		got.expect(t, 201, "")
		if fence := answerFence(t, c.method+" passed", got.header); len(fence) != 0 {
			t.Errorf("%s %s passed: the answer carries %v, want no Fence-* field", c.method, c.path, fence)
		}
	}
	read := f.do(call{method: "GET", path: "/v1/items/1"})
	read.expect(t, 201, "")
	if read.header.Get("Fence_receipt") != "forged-1" || read.header.Get("Fence-Receipt") != "forged-0" {
		t.Errorf("read: the backend's answer was not relayed as it is: %v", read.header)
	}
}
