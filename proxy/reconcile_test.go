package proxy_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/proxy"
	"github.com/fencegate/fencegate/store"
)

// rcEffectServer is a backend's effect-query endpoint: it records every
// query as it arrived (escaped path, query, headers) and answers with the
// handler set at that moment.
type rcEffectServer struct {
	mu     sync.Mutex
	seen   []rcEffectQuery
	answer http.HandlerFunc
	srv    *httptest.Server
}

type rcEffectQuery struct {
	escapedPath string
	query       url.Values
	opHeader    string
}

func newRCEffectServer(t *testing.T) *rcEffectServer {
	e := &rcEffectServer{answer: func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.seen = append(e.seen, rcEffectQuery{r.URL.EscapedPath(), r.URL.Query(), r.Header.Get(fencegate.HeaderOperationID)})
		answer := e.answer
		e.mu.Unlock()
		answer(w, r)
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *rcEffectServer) set(h http.HandlerFunc) { e.mu.Lock(); e.answer = h; e.mu.Unlock() }
func (e *rcEffectServer) count() int             { e.mu.Lock(); defer e.mu.Unlock(); return len(e.seen) }
func (e *rcEffectServer) queries() []rcEffectQuery {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]rcEffectQuery(nil), e.seen...)
}

// rcLiveness bounds waits for the reconcile loop (20ms interval in
// the fixture); it only turns a hang into a failure.
const rcLiveness = 10 * time.Second

func rcWait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(rcLiveness)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// unknownOn makes a write to /v1/docs/1 (resource doc/1, fence 5) whose
// outcome is unknown (the backend hangs past its timeout) and returns its
// operation ID.
func rcUnknownOn(t *testing.T, f *fixture, mut ...func(*fencegate.Grant)) string {
	t.Helper()
	tok, g := f.crafted("doc/1", "worker-a", 5, mut...)
	f.back.setMode("hang")
	f.do(call{path: "/v1/docs/1", owner: "worker-a", grant: string(tok), status: f.proof(tok, g), seg: "1", body: "one"}).expect(t, 504, fencegate.CodeMutationUnknown)
	f.back.setMode("")
	return g.OperationRoot + "/1"
}

func rcUnknownOps(f *fixture) []string {
	f.t.Helper()
	var list []store.Mutation
	if code := f.adminJSON("GET", "/v1/unknown", "", &list); code != 200 {
		f.t.Fatalf("GET /v1/unknown: %d", code)
	}
	var ops []string
	for _, m := range list {
		ops = append(ops, m.OperationID)
	}
	return ops
}

func rcReceipts(f *fixture, resource, op string) []store.Receipt {
	f.t.Helper()
	var list []store.Receipt
	f.adminJSON("GET", "/v1/receipts?resource="+url.QueryEscape(resource)+"&op="+url.QueryEscape(op), "", &list)
	return list
}

// TestEffectQueryEscapesPlaceholders: placeholders in the effect query's
// path are escaped as path segments and those in its query as query
// values, so an operation ID with a space, '+', '&', '=' and '/' (and a
// resource with '/') reach a real effect-query server exactly, and its
// answer settles the mutation with the body it sent.
func TestEffectQueryEscapesPlaceholders(t *testing.T) {
	eff := newRCEffectServer(t)
	f := newFixture(t, func(c *proxy.Config) {
		c.Routes[1].EffectQuery = eff.srv.URL + "/effects/{operationId}/{resource}?op={operationId}&resource={resource}&fence={fence}&seq={seq}"
	})
	const root = "root with space+plus&x=y"
	op := rcUnknownOn(t, f, func(g *fencegate.Grant) { g.OperationRoot = root })
	if op != root+"/1" {
		t.Fatalf("operation ID %q", op)
	}
	eff.set(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("effect of the odd one")) })
	f.run()
	rcWait(t, "an effect query", func() bool { return eff.count() > 0 })

	q := eff.queries()[0]
	segs := strings.Split(strings.TrimPrefix(q.escapedPath, "/effects/"), "/")
	if len(segs) != 2 {
		t.Fatalf("effect query path %q: want /effects/{operationId}/{resource}, each one escaped segment", q.escapedPath)
	}
	gotOp, err1 := url.PathUnescape(segs[0])
	gotRes, err2 := url.PathUnescape(segs[1])
	if err1 != nil || err2 != nil || gotOp != op || gotRes != "doc/1" {
		t.Errorf("path %q carries operation ID %q and resource %q, want %q and %q", q.escapedPath, gotOp, gotRes, op, "doc/1")
	}
	if q.query.Get("op") != op || q.query.Get("resource") != "doc/1" || q.query.Get("fence") != "5" || q.query.Get("seq") != "1" || len(q.query) != 4 {
		t.Errorf("query carries %v, want op=%q resource=doc/1 fence=5 seq=1", q.query, op)
	}
	if q.opHeader != op {
		t.Errorf("header %s: %q", fencegate.HeaderOperationID, q.opHeader)
	}
	rcWait(t, "the mutation to be settled", func() bool { return len(rcUnknownOps(f)) == 0 })
	if rs := rcReceipts(f, "doc/1", op); len(rs) != 1 || string(rs[0].Response.Body) != "effect of the odd one" || rs[0].Source != store.SourceReconciled {
		t.Fatalf("receipts of %q: %+v", op, rs)
	}
}

// TestEffectQueryUnusableBodyCannotTell: an effect query that answers 200
// with a body cut off mid-way (short of its Content-Length, or a chunked
// body without its last chunk) or larger than the route's
// responseStoreLimit, or 404 with a body cut off, settles nothing: the
// mutation stays unknown, no receipt is stored, and the reason is logged.
// A complete answer within the limit then settles it with exactly its body.
func TestEffectQueryUnusableBodyCannotTell(t *testing.T) {
	const limit = 32
	eff := newRCEffectServer(t)
	f := newFixture(t, func(c *proxy.Config) {
		c.Routes[1].EffectQuery = eff.srv.URL + "/effects/{operationId}"
		c.Routes[1].ResponseStoreLimit = limit
	})
	op := rcUnknownOn(t, f)
	cut := func(status int, contentLength bool) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			if contentLength {
				w.Header().Set("Content-Length", "30")
			}
			w.WriteHeader(status)
			_, _ = w.Write([]byte("applied, but the res"))
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // the connection closes mid-body
		}
	}
	bad := []struct {
		name   string
		answer http.HandlerFunc
		log    string
	}{
		{"200 cut short of its Content-Length", cut(200, true), "answered 200 with an unusable body"},
		{"200 chunked, cut before the last chunk", cut(200, false), "answered 200 with an unusable body"},
		{"200 with a body above the limit", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(strings.Repeat("x", limit+1)))
		}, "answered 200 with an unusable body"},
		{"200 chunked with a body above the limit", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(strings.Repeat("x", limit)))
			w.(http.Flusher).Flush()
			_, _ = w.Write([]byte("x"))
		}, "answered 200 with an unusable body"},
		{"404 cut short", cut(404, true), "answered 404 but its body broke off"},
	}
	f.run()
	for _, b := range bad {
		eff.set(b.answer)
		n := eff.count()
		// The second query after the switch starts a new pass: the pass of
		// the first one, answered this way, is over.
		rcWait(t, "two effect queries answered "+b.name, func() bool { return eff.count() >= n+2 || len(rcUnknownOps(f)) == 0 })
		if ops := rcUnknownOps(f); len(ops) != 1 || ops[0] != op {
			t.Fatalf("%s: unknown mutations %q, want %q still unknown", b.name, ops, op)
		}
		if rs := rcReceipts(f, "doc/1", op); len(rs) != 0 {
			t.Fatalf("%s: a receipt was stored: %+v", b.name, rs)
		}
		if n := f.logs.FilterMessageSnippet(b.log).FilterField(zap.String("operationId", op)).Len(); n == 0 {
			t.Fatalf("%s: not logged (%q): %v", b.name, b.log, f.logs.All())
		}
	}

	body := strings.Repeat("y", limit) // exactly the limit
	eff.set(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(body)) })
	rcWait(t, "the mutation to be settled", func() bool { return len(rcUnknownOps(f)) == 0 })
	if rs := rcReceipts(f, "doc/1", op); len(rs) != 1 || string(rs[0].Response.Body) != body {
		t.Fatalf("receipts: %+v", rs)
	}
}

// TestReconcileEffectQueryRoutes: a mutation does not record its route, so
// every route whose resource template produces its resource and that has
// an effect query counts. When those routes name different effect queries
// the sidecar does not pick one: neither endpoint is asked, the mutation
// stays unknown and the reason is logged. Routes that agree (the same
// template; routes without an effect query do not count) settle it.
func TestReconcileEffectQueryRoutes(t *testing.T) {
	proofStatus := proxy.RouteStatus{Mode: proxy.StatusProof, MaxAge: 5 * time.Second}
	t.Run("disagree", func(t *testing.T) {
		a, b := newRCEffectServer(t), newRCEffectServer(t)
		f := newFixture(t, func(c *proxy.Config) {
			c.Routes[1].EffectQuery = a.srv.URL + "/effects/{operationId}"
			c.Routes = append(c.Routes, proxy.RouteConfig{Method: "POST", Path: "/v1/docs/{id}/revisions", Resource: "doc/{id}",
				Status: proofStatus, EffectQuery: b.srv.URL + "/effects/{operationId}"})
		})
		op := rcUnknownOn(t, f)
		applied := func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("applied")) }
		a.set(applied)
		b.set(applied)
		f.run()
		skipped := func() int {
			return f.logs.FilterMessageSnippet("name different effect queries").FilterField(zap.String("operationId", op)).Len()
		}
		// Two logged skips: a whole pass ran after the first.
		rcWait(t, "the skip to be logged twice, or an effect query", func() bool { return skipped() >= 2 || a.count()+b.count() > 0 })
		if a.count()+b.count() != 0 {
			t.Fatalf("an effect query was asked (%d, %d) although the routes disagree", a.count(), b.count())
		}
		if ops := rcUnknownOps(f); len(ops) != 1 || ops[0] != op {
			t.Fatalf("unknown mutations %q, want %q", ops, op)
		}
	})
	t.Run("agree", func(t *testing.T) {
		a := newRCEffectServer(t)
		f := newFixture(t, func(c *proxy.Config) {
			c.Routes[1].EffectQuery = a.srv.URL + "/effects/{operationId}"
			c.Routes = append(c.Routes,
				proxy.RouteConfig{Method: "POST", Path: "/v1/docs/{id}/revisions", Resource: "doc/{id}", Status: proofStatus,
					EffectQuery: a.srv.URL + "/effects/{operationId}"},
				proxy.RouteConfig{Method: "DELETE", Path: "/v1/docs/{id}", Resource: "doc/{id}", Status: proofStatus})
		})
		op := rcUnknownOn(t, f)
		a.set(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNotFound) })
		f.run()
		rcWait(t, "the mutation to be settled", func() bool { return len(rcUnknownOps(f)) == 0 })
		if rs := rcReceipts(f, "doc/1", op); len(rs) != 0 {
			t.Fatalf("a mutation proven not applied has receipts: %+v", rs)
		}
		if n := f.logs.FilterMessageSnippet("name different effect queries").Len(); n != 0 {
			t.Fatalf("agreeing routes were reported as disagreeing: %v", f.logs.All())
		}
	})
}

// TestListPausedFailureLogged: when the store cannot list paused
// resources, the reconcile pass (which keeps the paused gauge) and the
// admin API (GET /v1/paused, /readyz) log it instead of dropping it.
func TestListPausedFailureLogged(t *testing.T) {
	f := newFixture(t)
	if err := f.store.Close(); err != nil {
		t.Fatal(err)
	}
	f.run()
	rcWait(t, "the reconcile pass to log the failure", func() bool {
		return f.logs.FilterMessageSnippet("listing paused resources failed; the paused gauge").Len() > 0
	})
	for path, msg := range map[string]string{"/v1/paused": "admin: listing paused resources failed", "/readyz": "readiness: listing paused resources failed"} {
		if code := f.adminJSON("GET", path, "", nil); code != http.StatusServiceUnavailable {
			t.Fatalf("GET %s over a closed store: %d, want 503", path, code)
		}
		if f.logs.FilterMessageSnippet(msg).FilterLevelExact(zap.ErrorLevel).Len() != 1 {
			t.Fatalf("GET %s: the store failure was not logged: %v", path, f.logs.All())
		}
	}
}
