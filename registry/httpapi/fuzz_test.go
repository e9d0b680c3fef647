package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/identity"
)

// FuzzAPI: no body on any write route makes the registry answer 5xx or
// anything but JSON or problem+json.
func FuzzAPI(f *testing.F) {
	fx := newFixture(f, identity.Config{Mode: identity.ModeInsecureHeader})
	for _, s := range []string{`{"resource":"a/b","requestId":"r"}`, `{"ttlMs":1e309}`, `{"resource":"` + strings.Repeat("a", 300) + `"}`, `[]`, `null`, `{"floor":18446744073709551616}`} {
		f.Add(s, uint8(0))
	}
	paths := []string{"/v1/leases", "/v1/leases/x/renew", "/v1/leases/x/release", "/v1/admin/fence-floor", "/v1/admin/policies"}
	f.Fuzz(func(t *testing.T, body string, route uint8) {
		path := paths[int(route)%len(paths)]
		method := "POST"
		if path == "/v1/admin/policies" {
			method = "PUT"
		}
		req, _ := http.NewRequest(method, fx.srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(idHeader, "worker-a")
		req.Header.Set("Authorization", "Bearer s3cret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode >= 500 {
			d, _ := fencegate.ReadProblem(resp)
			t.Fatalf("%s %s %q: %d %+v", method, path, body, resp.StatusCode, d)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" && ct != fencegate.ProblemContentType {
			t.Fatalf("%s %s: content type %q", method, path, ct)
		}
	})
}

// FuzzStoreAPI: no body on a store anchor route makes the registry answer
// 5xx or anything but JSON or problem+json, and a refused one (but a
// registration presenting another generation, which is recorded) changes
// nothing.
func FuzzStoreAPI(f *testing.F) {
	fx := newFixture(f, identity.Config{Mode: identity.ModeInsecureHeader})
	ctx := context.Background()
	if _, err := fx.reg.RegisterStore(ctx, sidecar, "fz", "gen-1"); err != nil {
		f.Fatal(err)
	}
	seeds := []string{
		`{"generation":"gen-1"}`, `{"generation":""}`, `{"generation":"g\u0000"}`,
		`{"generation":"gen-1","items":[{"resource":"a/1","op":"BEGIN","prior":{"fence":0,"lastSeq":0},"next":{"fence":1,"root":"r","lastSeq":0,"pending":{"seq":1,"payloadDigest":"` + payA + `"}}}]}`,
		`{"generation":"gen-1","items":[{"resource":"a/1","op":"SETTLE","prior":{"fence":1,"root":"r","lastSeq":0,"pending":{"seq":1,"payloadDigest":"` + payA + `"}},"next":{"fence":1,"root":"r","lastSeq":0}}]}`,
		`{"generation":"gen-1","items":[{"resource":"a/1","op":"PAUSE","prior":{},"next":{"fence":0,"lastSeq":0,"paused":"X"}}]}`,
		`{"generation":"gen-1","items":[{"resource":"a/1","op":"SEED","next":{"fence":18446744073709551615,"root":"r","lastSeq":4294967295}}]}`,
		`{"generation":"gen-1","items":[{"resource":"a/1","op":"RESUME","next":{"fence":1e3}}]}`,
		`{"generation":"gen-1","items":null}`, `{"items":[{}]}`,
		`{"shape":"PUT /v1/items/{}","kind":"ENFORCE","detail":"x"}`, `{"shape":"","kind":"FORCED_DOWNGRADE"}`,
		`[]`, `null`, `{"generation":7}`,
	}
	for i, s := range seeds {
		f.Add(s, uint8(i))
	}
	type route struct{ method, path string }
	routes := []route{{"PUT", "/v1/stores/fz"}, {"POST", "/v1/stores/fz/progress"}, {"POST", "/v1/stores/fz/ledger"}, {"POST", "/v1/stores/fz/acknowledge"}}
	state := func(t *testing.T) string {
		v, err := fx.reg.Store(ctx, sidecar, "fz")
		if err != nil {
			t.Fatal(err)
		}
		page, err := fx.reg.Anchors(ctx, sidecar, "fz", "", fencegate.MaxAnchorPage)
		if err != nil {
			t.Fatal(err)
		}
		m, _ := fx.backend.Meta(ctx)
		b, _ := json.Marshal([]any{v, page, m})
		return string(b)
	}
	f.Fuzz(func(t *testing.T, body string, r uint8) {
		rt := routes[int(r)%len(routes)]
		before := state(t)
		req, _ := http.NewRequest(rt.method, fx.srv.URL+rt.path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(idHeader, sidecar)
		req.Header.Set("Authorization", "Bearer s3cret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode >= 500 {
			d, _ := fencegate.ReadProblem(resp)
			t.Fatalf("%s %s %q: %d %+v", rt.method, rt.path, body, resp.StatusCode, d)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" && ct != fencegate.ProblemContentType {
			t.Fatalf("%s %s: content type %q", rt.method, rt.path, ct)
		}
		if resp.StatusCode >= 400 {
			d, err := fencegate.ReadProblem(resp)
			if err != nil {
				t.Fatal(err)
			}
			if d.Code != fencegate.CodeStoreLost && state(t) != before {
				t.Fatalf("%s %s %q refused with %s but changed the store", rt.method, rt.path, body, d.Code)
			}
		}
	})
}
