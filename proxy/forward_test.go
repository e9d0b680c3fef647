package proxy_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/proxy"
	"github.com/fencegate/fencegate/proxy/adminapi"
	"github.com/fencegate/fencegate/store"
)

// scripted is a backend whose answer each test sets; it counts the
// requests it receives and keeps their bodies.
type scripted struct {
	mu     sync.Mutex
	answer http.HandlerFunc
	bodies []string
	srv    *httptest.Server
}

func newScripted(t *testing.T) *scripted {
	s := &scripted{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.bodies = append(s.bodies, string(body))
		h := s.answer
		s.mu.Unlock()
		if h == nil {
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, "stored "+string(body))
			return
		}
		h(w, r)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *scripted) set(h http.HandlerFunc) { s.mu.Lock(); s.answer = h; s.mu.Unlock() }
func (s *scripted) count() int             { s.mu.Lock(); defer s.mu.Unlock(); return len(s.bodies) }

// withBackend points the sidecar at another backend.
func withBackend(url string) func(*proxy.Config) {
	return func(c *proxy.Config) { c.Backend.URL = url }
}

// restartWith rebuilds the sidecar over st (the fixture's store when nil)
// with a transport of the test's own (the default when nil).
func (f *fixture) restartWith(st store.Store, tr http.RoundTripper) {
	f.t.Helper()
	if st == nil {
		st = f.store
	}
	rc, _ := client.New(f.regSrv.URL)
	f.metrics = prometheus.NewRegistry()
	core, logs := observer.New(zap.InfoLevel)
	f.logs = logs
	log := zap.New(core)
	p, err := proxy.New(proxy.Options{Config: f.cfg, Store: st, Status: rc, Transport: tr, Metrics: f.metrics, Logger: log})
	if err != nil {
		f.t.Fatal(err)
	}
	f.proxy = p
	f.srv = httptest.NewServer(p)
	admin, err := adminapi.New(adminapi.Options{Proxy: p, Gatherer: f.metrics, Logger: log})
	if err != nil {
		f.t.Fatal(err)
	}
	f.admin = httptest.NewServer(admin)
	srv, adm := f.srv, f.admin // this start's servers: a restart replaces f's
	f.t.Cleanup(func() { srv.Close(); adm.Close() })
}

// TestOversizedAnswerIsRecordedTruncated: a legal backend answer the store
// cannot hold whole (a Location over store.MaxHeaderValueLen, more than
// store.MaxResponseHeaders values) still commits. The client gets the full
// answer; the receipt keeps what fits and is marked truncated; the resource
// is not blocked; a replay of an incomplete receipt is REPLAY_INCOMPLETE
// (issue 14.3), never the stored fragment passed off as the answer.
func TestOversizedAnswerIsRecordedTruncated(t *testing.T) {
	back := newScripted(t)
	f := newFixture(t, withBackend(back.srv.URL))
	ctx := context.Background()
	l := f.acquire("worker-a", "item/1")
	fence := l.View.Lease.Fence
	send := func(seg, body string) answer {
		return f.do(call{path: "/v1/items/1", owner: "worker-a", grant: string(l.Grant), seg: seg, body: body})
	}
	receipt := func(seq uint64) store.Receipt {
		t.Helper()
		rc, err := f.store.Receipt(ctx, store.ReceiptKey{Resource: "item/1", Fence: fence, Seq: seq})
		if err != nil {
			t.Fatalf("receipt of segment %d: %v", seq, err)
		}
		return rc
	}

	// Segment 1: a Location of 5 KiB.
	location := "/v1/items/1?" + strings.Repeat("a", 5<<10)
	back.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Location", location)
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("X-Custom", "yes")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "created one")
	})
	a := send("1", "one")
	a.expect(t, http.StatusOK, "")
	if a.header.Get("Location") != location || a.header.Get("X-Custom") != "yes" || a.body != "created one" || a.header.Get(fencegate.HeaderReceipt) == "" {
		t.Fatalf("the client must get the backend's full answer with its receipt: %d %q (Location %d bytes)", a.code, a.body, len(a.header.Get("Location")))
	}
	rc1 := receipt(1)
	if rc1.ID != a.header.Get(fencegate.HeaderReceipt) || !rc1.Response.Truncated || rc1.Response.Header["Location"] != nil ||
		rc1.Response.Header["ETag"][0] != `"v1"` || string(rc1.Response.Body) != "created one" {
		t.Fatalf("receipt 1: the oversized Location is dropped whole, the rest kept, marked truncated: %+v", rc1.Response)
	}

	// Segment 2 proceeds (nothing blocks the resource): 40 Cache-Control values.
	var values []string
	for i := range 40 {
		values = append(values, "max-age="+strconv.Itoa(i))
	}
	back.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header()["Cache-Control"] = values
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "updated two")
	})
	a = send("2", "two")
	a.expect(t, http.StatusOK, "")
	if got := a.header.Values("Cache-Control"); strings.Join(got, "|") != strings.Join(values, "|") || a.header.Get(fencegate.HeaderReceipt) == "" {
		t.Fatalf("the client must get all 40 values: %v", got)
	}
	rc2 := receipt(2)
	kept := rc2.Response.Header["Cache-Control"]
	if !rc2.Response.Truncated || len(rc2.Response.Header["Content-Type"]) != 1 || len(kept) != store.MaxResponseHeaders-1 ||
		strings.Join(kept, "|") != strings.Join(values[:len(kept)], "|") {
		t.Fatalf("receipt 2: Content-Type then the first Cache-Control values up to %d in all, marked truncated: %+v", store.MaxResponseHeaders, rc2.Response)
	}

	// Segment 3 proceeds as usual.
	back.set(nil)
	send("3", "three").expect(t, http.StatusCreated, "")
	if rec, _ := f.record("item/1"); rec.LastSeq != 3 || rec.InFlight != nil {
		t.Fatalf("record: %+v", rec)
	}
	n := back.count()
	if unknown, err := f.store.ListUnknown(ctx, time.Now().Add(time.Hour)); err != nil || len(unknown) != 0 {
		t.Fatalf("unknown mutations %v (%v)", unknown, err)
	}

	// Replays say the segments were accepted but cannot give their answers
	// whole, without the backend.
	for seg, rc := range map[string]store.Receipt{"1": rc1, "2": rc2} {
		r := send(seg, map[string]string{"1": "one", "2": "two"}[seg])
		r.expect(t, http.StatusConflict, fencegate.CodeReplayIncomplete)
		if r.header.Get(fencegate.HeaderReplayed) != "true" || r.header.Get(fencegate.HeaderReceipt) != rc.ID || r.problem.Extra["receiptId"] != rc.ID {
			t.Fatalf("replay %s: %d %v %+v", seg, r.code, r.header, r.problem)
		}
	}
	if back.count() != n {
		t.Fatal("a replay reached the backend")
	}
}

// closeRecorder is a transport that records whether the body of each
// backend answer was closed.
type closeRecorder struct {
	base   http.RoundTripper
	mu     sync.Mutex
	bodies []*recordedBody
}

type recordedBody struct {
	io.ReadCloser
	closed atomic.Bool
}

func (b *recordedBody) Close() error { b.closed.Store(true); return b.ReadCloser.Close() }

func (c *closeRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	b := &recordedBody{ReadCloser: resp.Body}
	resp.Body = b
	c.mu.Lock()
	c.bodies = append(c.bodies, b)
	c.mu.Unlock()
	return resp, nil
}

func (c *closeRecorder) open() (n, open int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range c.bodies {
		if !b.closed.Load() {
			open++
		}
	}
	return len(c.bodies), open
}

// TestBackend5xxBodyIsClosed: a 5xx answer longer than maxResponseBytes
// (so its rest is still streaming) is closed on the MUTATION_UNKNOWN path.
func TestBackend5xxBodyIsClosed(t *testing.T) {
	back := newScripted(t)
	f := newFixture(t, withBackend(back.srv.URL), func(c *proxy.Config) { c.Backend.MaxResponseBytes = 16 })
	tr := &closeRecorder{base: http.DefaultTransport.(*http.Transport).Clone()}
	t.Cleanup(tr.base.(*http.Transport).CloseIdleConnections)
	f.restartWith(nil, tr)
	back.set(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, strings.Repeat("e", 1000))
	})
	l := f.acquire("worker-a", "item/1")
	a := f.do(call{path: "/v1/items/1", owner: "worker-a", grant: string(l.Grant), body: "x"})
	a.expect(t, http.StatusGatewayTimeout, fencegate.CodeMutationUnknown)
	if n, open := tr.open(); n != 1 || open != 0 {
		t.Fatalf("backend answers %d, left open %d: the 5xx body must be closed", n, open)
	}
}

// TestMarkUnknownFailureAfterCommitFailureIsLogged: when the store fails
// both Commit and MarkUnknown, the client still gets MUTATION_UNKNOWN and
// the MarkUnknown failure is logged at error level.
func TestMarkUnknownFailureAfterCommitFailureIsLogged(t *testing.T) {
	f := newFixture(t)
	st := &failingStore{Store: f.store, failCommit: true, failMarkUnknown: true}
	f.restartWith(st, nil)
	l := f.acquire("worker-a", "item/1")
	f.do(call{path: "/v1/items/1", owner: "worker-a", grant: string(l.Grant), body: "x"}).expect(t, http.StatusGatewayTimeout, fencegate.CodeMutationUnknown)
	if f.logs.FilterLevelExact(zap.ErrorLevel).FilterMessageSnippet("MarkUnknown failed").Len() != 1 {
		t.Fatalf("the MarkUnknown failure was not logged: %v", f.logs.All())
	}
}

// failingStore is the real store with chosen calls failing (fault
// injection for paths a healthy store never takes).
type failingStore struct {
	store.Store
	failCommit, failMarkUnknown bool
	beginErr                    error
	recordErr                   error
}

var errInjected = store.ErrClosed

func (s *failingStore) Begin(ctx context.Context, in store.BeginInput) (store.BeginResult, error) {
	if s.beginErr != nil {
		return store.BeginResult{}, s.beginErr
	}
	return s.Store.Begin(ctx, in)
}

func (s *failingStore) Commit(ctx context.Context, in store.CommitInput) (store.Receipt, error) {
	if s.failCommit {
		return store.Receipt{}, errInjected
	}
	return s.Store.Commit(ctx, in)
}

func (s *failingStore) MarkUnknown(ctx context.Context, in store.MarkUnknownInput) (store.Mutation, error) {
	if s.failMarkUnknown {
		return store.Mutation{}, errInjected
	}
	return s.Store.MarkUnknown(ctx, in)
}

func (s *failingStore) Record(ctx context.Context, resource string) (store.Record, error) {
	if s.recordErr != nil {
		return store.Record{}, s.recordErr
	}
	return s.Store.Record(ctx, resource)
}
