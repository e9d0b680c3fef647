package proxy_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/proxy"
	proxyserver "github.com/fencegate/fencegate/proxy/server"
	"github.com/fencegate/fencegate/store"
)

// gzipped compresses s.
func gzipped(t *testing.T, s string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := io.WriteString(zw, s); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// withRoute changes the fixture's first route (PUT /v1/items/{id}, item/{id}).
func withRoute(mut func(*proxy.RouteConfig)) func(*proxy.Config) {
	return func(c *proxy.Config) { mut(&c.Routes[0]) }
}

// comparable is an answer's header without what legitimately differs
// between a first answer and its replay: Date (the moment of each),
// Set-Cookie (never replayed) and Fence-Replayed (the replay's mark).
func comparable(h http.Header) http.Header {
	c := h.Clone()
	for _, k := range []string{"Date", "Set-Cookie", fencegate.HeaderReplayed} {
		c.Del(k)
	}
	return c
}

// TestReplayOfCompressedAnswerIsFaithful (issue 14.2): a backend answers a
// write gzip-compressed with its representation and application headers
// and a cookie. The replay gives the client the same status, headers and
// bytes as the first answer (minus Date, Set-Cookie and Fence-Replayed);
// the receipt holds no cookie; and Go's http.Client, decompressing
// transparently, reads the same decoded body both times.
func TestReplayOfCompressedAnswerIsFaithful(t *testing.T) {
	back := newScripted(t)
	f := newFixture(t, withBackend(back.srv.URL))
	ctx := context.Background()
	const doc = `{"id":"1","name":"widget","tags":["a","b"]}`
	zipped := gzipped(t, doc)
	back.set(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/json; charset=utf-8")
		h.Set("Content-Encoding", "gzip")
		h.Set("Vary", "Accept-Encoding")
		h.Set("ETag", `W/"2c-abc"`)
		h.Set("Cache-Control", "no-cache")
		h.Set("Location", "/v1/items/1")
		h.Set("X-App-Header", "app-value")
		h.Set("X-Request-Id", "req-42")
		h.Set("Set-Cookie", "session=secret; HttpOnly")
		w.WriteHeader(http.StatusOK)
		w.Write(zipped)
	})
	l := f.acquire("worker-a", "item/1")
	send := func(seg string) answer {
		return f.do(call{path: "/v1/items/1", owner: "worker-a", grant: string(l.Grant), seg: seg, body: doc,
			hdr: http.Header{"Accept-Encoding": {"gzip"}}})
	}

	first := send("1")
	first.expect(t, http.StatusOK, "")
	if first.body != string(zipped) || first.header.Get("Content-Encoding") != "gzip" || first.header.Get("Set-Cookie") == "" ||
		first.header.Get(fencegate.HeaderReceipt) == "" {
		t.Fatalf("first answer: %v", first.header)
	}
	n := back.count()
	replay := send("1")
	replay.expect(t, http.StatusOK, "")
	if back.count() != n {
		t.Fatal("the replay reached the backend")
	}
	if replay.header.Get(fencegate.HeaderReplayed) != "true" || replay.header.Get("Set-Cookie") != "" {
		t.Fatalf("replay: Fence-Replayed and no cookie expected: %v", replay.header)
	}
	if replay.body != first.body {
		t.Fatalf("replay body differs from the first answer's (%d vs %d bytes)", len(replay.body), len(first.body))
	}
	want, got := comparable(first.header), comparable(replay.header)
	for k := range want {
		if strings.Join(want[k], "|") != strings.Join(got[k], "|") {
			t.Errorf("header %s: first %q, replay %q", k, want[k], got[k])
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("the replay adds header %s: %q", k, got[k])
		}
	}
	rc, err := f.store.Receipt(ctx, store.ReceiptKey{Resource: "item/1", Fence: l.View.Lease.Fence, Seq: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rc.Response.Truncated || http.Header(rc.Response.Header).Get("Set-Cookie") != "" || http.Header(rc.Response.Header).Get("Date") != "" {
		t.Fatalf("the receipt must keep no cookie and no Date, and be complete: %+v", rc.Response.Header)
	}

	// Go's client with its default transparent decompression (it sends
	// Accept-Encoding: gzip itself and decodes what says Content-Encoding).
	decoded := func(seg string) (string, bool, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPut, f.srv.URL+"/v1/items/1", strings.NewReader(doc))
		req.Header.Set(idHeader, "worker-a")
		req.Header.Set(fencegate.HeaderGrant, string(l.Grant))
		req.Header.Set(fencegate.HeaderSegment, seg)
		resp, err := (&http.Client{}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(b), resp.Uncompressed, resp.Header.Get(fencegate.HeaderReplayed)
	}
	body, unc, replayed := decoded("2")
	if body != doc || !unc || replayed != "" {
		t.Fatalf("first answer through http.Client: %q (uncompressed %v)", body, unc)
	}
	body, unc, replayed = decoded("2")
	if body != doc || !unc || replayed != "true" {
		t.Fatalf("replay through http.Client: %q (uncompressed %v, replayed %q), want the decoded document", body, unc, replayed)
	}
}

// TestReceiptKeepsRepresentationHeadersFirst (issue 14.2): when an answer
// has more header values than the store keeps, the representation headers
// survive and the application's headers are what is dropped.
func TestReceiptKeepsRepresentationHeadersFirst(t *testing.T) {
	back := newScripted(t)
	f := newFixture(t, withBackend(back.srv.URL))
	back.set(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		for i := range store.MaxResponseHeaders {
			h.Add("X-Aaa-Many", strings.Repeat("v", i+1)) // sorts before every representation header
		}
		h.Set("Vary", "Accept-Encoding")
		h.Set("Expires", "Thu, 01 Jan 2099 00:00:00 GMT")
		h.Set("Content-Type", "application/json")
		h.Set("Content-Encoding", "identity")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, `{}`)
	})
	l := f.acquire("worker-a", "item/1")
	f.do(call{path: "/v1/items/1", owner: "worker-a", grant: string(l.Grant), body: "x"}).expect(t, http.StatusOK, "")
	rc, err := f.store.Receipt(context.Background(), store.ReceiptKey{Resource: "item/1", Fence: l.View.Lease.Fence, Seq: 1})
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header(rc.Response.Header)
	if !rc.Response.Truncated || h.Get("Content-Type") != "application/json" || h.Get("Content-Encoding") != "identity" ||
		h.Get("Vary") != "Accept-Encoding" || h.Get("Expires") == "" || len(h.Values("X-Aaa-Many")) != store.MaxResponseHeaders-4 {
		t.Fatalf("receipt headers %v (truncated %v): the 4 representation headers first, then %d application values",
			rc.Response.Header, rc.Response.Truncated, store.MaxResponseHeaders-4)
	}
}

// TestReplayOfIncompleteAnswerIsReplayIncomplete (issue 14.3): an answer
// over the route's responseStoreLimit reaches the client that sent the
// write whole; its replay is never a cut body passed off as the answer but
// a 409 REPLAY_INCOMPLETE problem that says the write was accepted
// (receiptId, operationId, backendStatus, Fence-Receipt, Fence-Replayed).
// The SDK's Transport turns it into an error matching
// client.ErrReplayIncomplete with the receipt ID, not a rejection; the
// segment stays accepted. A receipt incomplete because a header was
// dropped is answered the same way.
func TestReplayOfIncompleteAnswerIsReplayIncomplete(t *testing.T) {
	back := newScripted(t)
	f := newFixture(t, withBackend(back.srv.URL), withRoute(func(r *proxy.RouteConfig) { r.ResponseStoreLimit = 64 }))
	ctx := context.Background()
	items := make([]string, 40)
	for i := range items {
		items[i] = "item-" + strings.Repeat("x", i)
	}
	big, _ := json.Marshal(map[string]any{"items": items})
	back.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write(big)
	})

	wc, err := client.New(f.regSrv.URL, client.WithIdentityHeader(idHeader, "worker-a"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := wc.Hold(ctx, "item/1", client.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	tr := h.Transport(client.WithHeader(idHeader, "worker-a"))
	put := func(seg string) *http.Request {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, f.srv.URL+"/v1/items/1", strings.NewReader("payload-"+seg))
		req.Header.Set(fencegate.HeaderSegment, seg)
		return req
	}

	// The first answer is whole and intact.
	resp, err := tr.RoundTrip(put("1"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	receipt := resp.Header.Get(fencegate.HeaderReceipt)
	if resp.StatusCode != http.StatusCreated || !bytes.Equal(body, big) || !json.Valid(body) || receipt == "" || len(big) <= 64 {
		t.Fatalf("first answer: %d, %d of %d bytes, receipt %q", resp.StatusCode, len(body), len(big), receipt)
	}
	n := back.count()

	// A replay over plain HTTP: the documented problem.
	a := f.do(call{path: "/v1/items/1", owner: "worker-a", grant: h.Grant(), seg: "1", body: "payload-1"})
	a.expect(t, http.StatusConflict, fencegate.CodeReplayIncomplete)
	op := fencegate.OperationID(h.OperationRoot(), 1)
	if a.header.Get(fencegate.HeaderReceipt) != receipt || a.header.Get(fencegate.HeaderReplayed) != "true" ||
		a.problem.Extra["receiptId"] != receipt || a.problem.Extra["operationId"] != op || a.problem.Extra["backendStatus"] != float64(201) {
		t.Fatalf("REPLAY_INCOMPLETE must say the write was accepted: headers %v, problem %+v", a.header, a.problem)
	}
	if a.header.Get("Fence-Response-Truncated") != "" {
		t.Fatal("the undocumented Fence-Response-Truncated header is gone")
	}

	// The same replay through the SDK: a response, which ResponseError
	// reads as accepted, with its receipt.
	resp, err = tr.RoundTrip(put("1"))
	if err != nil {
		t.Fatalf("SDK replay: %v, want the sidecar's response", err)
	}
	err = client.ResponseError(resp)
	resp.Body.Close()
	var ri *client.ReplayIncompleteError
	var rej *client.RejectionError
	if !errors.Is(err, client.ErrReplayIncomplete) || !errors.As(err, &ri) || errors.As(err, &rej) || errors.Is(err, client.ErrOutcomeUnknown) {
		t.Fatalf("SDK replay: %v (%T), want a *ReplayIncompleteError", err, err)
	}
	if ri.ReceiptID != receipt || ri.BackendStatus != http.StatusCreated || ri.OperationID != op || ri.Seq != 1 {
		t.Fatalf("SDK replay error %+v", ri)
	}
	if st := h.State(); st != client.StateHeld || h.LastSegment() != 1 {
		t.Fatalf("holder %s, last segment %d: an accepted segment changes nothing", st, h.LastSegment())
	}
	if back.count() != n {
		t.Fatal("a replay reached the backend")
	}

	// Segment 2: a header over the store's value limit is dropped: incomplete too.
	back.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("X-Big", strings.Repeat("b", store.MaxHeaderValueLen+1))
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "small")
	})
	resp, err = tr.RoundTrip(put("2"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(resp.Header.Get("X-Big")) != store.MaxHeaderValueLen+1 {
		t.Fatalf("segment 2 first answer: %d", resp.StatusCode)
	}
	rc, err := f.store.Receipt(ctx, store.ReceiptKey{Resource: "item/1", Fence: h.Fence(), Seq: 2})
	if err != nil || !rc.Response.Truncated || string(rc.Response.Body) != "small" {
		t.Fatalf("receipt 2: %+v (%v)", rc.Response, err)
	}
	a = f.do(call{path: "/v1/items/1", owner: "worker-a", grant: h.Grant(), seg: "2", body: "payload-2"})
	a.expect(t, http.StatusConflict, fencegate.CodeReplayIncomplete)
	if a.problem.Extra["receiptId"] != rc.ID || a.problem.Extra["backendStatus"] != float64(200) {
		t.Fatalf("replay 2: %+v", a.problem)
	}

	// Nothing blocks: segment 3 proceeds.
	back.set(nil)
	resp, err = tr.RoundTrip(put("3"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("segment 3: %d", resp.StatusCode)
	}
}

// TestNoContentTypeIsInvented (issue 14.4): a backend answer without a
// Content-Type reaches the client without one, on the write and on its
// replay (net/http would otherwise sniff one, text/html for this body).
func TestNoContentTypeIsInvented(t *testing.T) {
	back := newScripted(t)
	f := newFixture(t, withBackend(back.srv.URL))
	back.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = nil // the backend itself sends none
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, "<html><body>created</body></html>")
	})
	l := f.acquire("worker-a", "item/1")
	for i, want := range []string{"", "true"} {
		a := f.do(call{path: "/v1/items/1", owner: "worker-a", grant: string(l.Grant), body: "x"})
		a.expect(t, http.StatusCreated, "")
		if ct, ok := a.header["Content-Type"]; ok || a.header.Get(fencegate.HeaderReplayed) != want || a.body != "<html><body>created</body></html>" {
			t.Fatalf("answer %d (replayed %q): Content-Type %q, want none", i, a.header.Get(fencegate.HeaderReplayed), ct)
		}
	}
}

// TestAnsweredBeforeEffect (issue 14.8): on a route whose backend promises
// to answer 500 before any effect, a 500 is committed as a receipt (the
// client gets it with Fence-Receipt, a replay returns it, the next segment
// proceeds, nothing is unknown); a 503, not listed, is still
// MUTATION_UNKNOWN and blocks.
func TestAnsweredBeforeEffect(t *testing.T) {
	back := newScripted(t)
	f := newFixture(t, withBackend(back.srv.URL), withRoute(func(r *proxy.RouteConfig) { r.AnsweredBeforeEffect = []int{500} }))
	ctx := context.Background()
	l := f.acquire("worker-a", "item/1")
	send := func(seg string) answer {
		return f.do(call{path: "/v1/items/1", owner: "worker-a", grant: string(l.Grant), seg: seg, body: "body-" + seg})
	}
	back.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, "malformed JSON")
	})
	a := send("1")
	a.expect(t, http.StatusInternalServerError, "")
	if a.header.Get(fencegate.HeaderReceipt) == "" || a.body != "malformed JSON" {
		t.Fatalf("the 500 must reach the client with its receipt: %v %q", a.header, a.body)
	}
	if rec, _ := f.record("item/1"); rec.LastSeq != 1 || rec.InFlight != nil {
		t.Fatalf("record after a committed 500: %+v", rec)
	}
	if unknown, err := f.store.ListUnknown(ctx, time.Now().Add(time.Hour)); err != nil || len(unknown) != 0 {
		t.Fatalf("unknown mutations %v (%v)", unknown, err)
	}
	r := send("1")
	r.expect(t, http.StatusInternalServerError, "")
	if r.header.Get(fencegate.HeaderReplayed) != "true" || r.body != "malformed JSON" || r.header.Get(fencegate.HeaderReceipt) != a.header.Get(fencegate.HeaderReceipt) {
		t.Fatalf("replay of the 500: %v %q", r.header, r.body)
	}
	back.set(nil)
	send("2").expect(t, http.StatusCreated, "")

	// A 503 is not listed: the outcome is unknown and the resource blocks.
	back.set(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	send("3").expect(t, http.StatusGatewayTimeout, fencegate.CodeMutationUnknown)
	back.set(nil)
	send("4").expect(t, http.StatusConflict, fencegate.CodeMutationUnknown)
}

// TestAnsweredBeforeEffectValidation: only 5xx statuses may be listed, and
// the key loads from YAML.
func TestAnsweredBeforeEffectValidation(t *testing.T) {
	for _, tc := range []struct {
		statuses []int
		bad      bool
	}{{[]int{500}, false}, {[]int{500, 502, 599}, false}, {[]int{404}, true}, {[]int{600}, true}, {[]int{500, 499}, true}} {
		c := validConfig(t)
		c.Routes[0].AnsweredBeforeEffect = tc.statuses
		err := c.Validate()
		if tc.bad != (err != nil) || (err != nil && !strings.Contains(err.Error(), "routes[0].answeredBeforeEffect")) {
			t.Errorf("answeredBeforeEffect %v: %v", tc.statuses, err)
		}
	}
	path := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(path, []byte("routes:\n  - method: PUT\n    path: /v1/x/{id}\n    resource: x/{id}\n    answeredBeforeEffect: [500, 503]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := proxyserver.Load(path)
	if err != nil || len(c.Routes) != 1 || len(c.Routes[0].AnsweredBeforeEffect) != 2 || c.Routes[0].AnsweredBeforeEffect[1] != 503 {
		t.Fatalf("load: %+v, %v", c.Routes, err)
	}
}
