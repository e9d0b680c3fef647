package proxy_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/proxy"
	"github.com/fencegate/fencegate/store"
)

// shadowCall is a write on the fixture's shadow route (POST /v1/shadow/{id},
// proof status) under a crafted grant of fence 5.
func (f *fixture) shadowCall(id, seg, body string) call {
	tok, g := f.crafted("shadow/"+id, "worker-a", 5)
	return call{method: "POST", path: "/v1/shadow/" + id, owner: "worker-a", grant: string(tok), status: f.proof(tok, g), seg: seg, body: body}
}

// TestShadowBackend5xxIsTransparent: in shadow mode a backend 5xx reaches
// the client unchanged, is recorded as the receipt (the answer is known),
// blocks nothing, and the would-reject counter says enforce mode would have
// answered MUTATION_UNKNOWN.
func TestShadowBackend5xxIsTransparent(t *testing.T) {
	back := newScripted(t)
	f := newFixture(t, withBackend(back.srv.URL))
	ctx := context.Background()
	back.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("X-Custom", "kept")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, "boom")
	})
	tok, g := f.crafted("shadow/1", "worker-a", 5)
	c := call{method: "POST", path: "/v1/shadow/1", owner: "worker-a", grant: string(tok), status: f.proof(tok, g), seg: "1", body: "one"}
	a := f.do(c)
	if a.code != http.StatusInternalServerError || a.problem != nil || a.body != "boom" || a.header.Get("X-Custom") != "kept" || a.header.Get("Content-Type") != "text/plain" {
		t.Fatalf("shadow changed the backend's 500: %d %q %v (problem %+v)", a.code, a.body, a.header, a.problem)
	}
	if unknown, err := f.store.ListUnknown(ctx, time.Now().Add(time.Hour)); err != nil || len(unknown) != 0 {
		t.Fatalf("shadow left unknown or unsettled mutations: %+v (%v)", unknown, err)
	}
	var listed []store.Mutation
	if st := f.adminJSON("GET", "/v1/unknown", "", &listed); st != http.StatusOK || len(listed) != 0 {
		t.Fatalf("admin /v1/unknown: %d %+v", st, listed)
	}
	rc, err := f.store.Receipt(ctx, store.ReceiptKey{Resource: "shadow/1", Fence: 5, Seq: 1})
	if err != nil || rc.BackendStatus != http.StatusInternalServerError || string(rc.Response.Body) != "boom" || rc.ID != a.header.Get(fencegate.HeaderReceipt) {
		t.Fatalf("the 500 must be recorded as the receipt the client was told: %+v (%v), header %q", rc, err, a.header.Get(fencegate.HeaderReceipt))
	}
	if n := f.counter("fencegate_proxy_shadow_would_reject_total", "code", string(fencegate.CodeMutationUnknown)); n != 1 {
		t.Fatalf("would-reject MUTATION_UNKNOWN = %v, want 1", n)
	}

	// The next write goes through the fenced path (a receipt) as usual.
	back.set(nil)
	c.seg, c.body = "2", "two"
	next := f.do(c)
	next.expect(t, http.StatusCreated, "")
	if next.body != "stored two" || next.header.Get(fencegate.HeaderReceipt) == "" {
		t.Fatalf("next write: %+v", next)
	}
	if rec, _ := f.record("shadow/1"); rec.LastSeq != 2 || rec.InFlight != nil {
		t.Fatalf("record: %+v", rec)
	}
	if n := f.counter("fencegate_proxy_shadow_would_reject_total"); n != 1 {
		t.Fatalf("would-reject total %v after a clean write, want 1", n)
	}
}

// TestShadowLostAnswerAnswersAsPassThrough: when the backend's answer is
// lost after a shadow write was sent, the client gets what a route in off
// mode answers for the same backend (502 BACKEND_UNAVAILABLE), not an
// enforcement code; the would-reject counter says MUTATION_UNKNOWN.
func TestShadowLostAnswerAnswersAsPassThrough(t *testing.T) {
	back := newScripted(t)
	f := newFixture(t, withBackend(back.srv.URL))
	back.set(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	off := f.do(call{method: "DELETE", path: "/v1/off/1"})
	shadow := f.do(f.shadowCall("1", "1", "one"))
	if off.problem == nil || shadow.problem == nil || shadow.code != off.code || shadow.problem.Code != off.problem.Code {
		t.Fatalf("shadow answered %d %+v, off mode %d %+v", shadow.code, shadow.problem, off.code, off.problem)
	}
	shadow.expect(t, http.StatusBadGateway, fencegate.CodeBackendUnavailable)
	if n := f.counter("fencegate_proxy_shadow_would_reject_total", "code", string(fencegate.CodeMutationUnknown)); n != 1 {
		t.Fatalf("would-reject MUTATION_UNKNOWN = %v, want 1", n)
	}
}

// TestShadowBodyOverLimitIsForwardedWhole: a streamed body over the
// route's limit is refused in enforce mode; shadow mode forwards it whole.
func TestShadowBodyOverLimitIsForwardedWhole(t *testing.T) {
	back := newScripted(t)
	f := newFixture(t, withBackend(back.srv.URL), func(c *proxy.Config) {
		for i := range c.Routes {
			if c.Routes[i].Mode == proxy.ModeShadow {
				c.Routes[i].BodyLimit = 16
			}
		}
	})
	c := f.shadowCall("1", "1", "")
	body := strings.Repeat("0123456789", 10)
	// An io.Reader of no known length: sent chunked, read up to the limit.
	req, _ := http.NewRequest(c.method, f.srv.URL+c.path, io.MultiReader(strings.NewReader(body)))
	req.Header.Set(idHeader, c.owner)
	req.Header.Set(fencegate.HeaderGrant, c.grant)
	req.Header.Set(fencegate.HeaderStatus, c.status)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated || string(got) != "stored "+body {
		t.Fatalf("shadow answered %d %q", resp.StatusCode, got)
	}
	if back.count() != 1 || back.bodies[0] != body {
		t.Fatalf("backend got %q", back.bodies)
	}
	if n := f.counter("fencegate_proxy_shadow_would_reject_total", "code", string(fencegate.CodeBodyTooLarge)); n != 1 {
		t.Fatalf("would-reject BODY_TOO_LARGE = %v, want 1", n)
	}
}

// TestShadowReplayIsForwardedNotRejected: in shadow mode an accepted
// segment sent again reaches the backend (shadow never answers from the
// store) and is counted as passed with code REPLAY, not as a rejection.
func TestShadowReplayIsForwardedNotRejected(t *testing.T) {
	f := newFixture(t)
	tok, g := f.crafted("shadow/r", "worker-a", 5)
	c := call{method: "POST", path: "/v1/shadow/r", owner: "worker-a", grant: string(tok), status: f.proof(tok, g), seg: "1", body: "one"}
	f.do(c).expect(t, 201, "")
	f.do(c).expect(t, 201, "")
	if n := f.back.count(); n != 2 {
		t.Fatalf("backend saw %d requests, want 2", n)
	}
	if n := f.counter("fencegate_proxy_mutations_total", "decision", "passed", "code", "REPLAY"); n != 1 {
		t.Fatalf("passed REPLAY = %v, want 1", n)
	}
	if n := f.counter("fencegate_proxy_shadow_would_reject_total"); n != 0 {
		t.Fatalf("a replay counted as would-reject: %v", n)
	}
}
