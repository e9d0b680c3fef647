package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock/clocktest"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/keys"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/registry/memory"
)

const idHeader = identity.DefaultHeader

type fixture struct {
	srv     *httptest.Server
	reg     *registry.Registry
	backend registry.Backend
	clock   *clocktest.Clock
}

func newFixture(t testing.TB, idc identity.Config) *fixture {
	t.Helper()
	k, err := keys.Generate(jwa.EdDSA, nil)
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := keys.NewSigner(k)
	f := &fixture{backend: memory.NewBackend(), clock: clocktest.New(time.UnixMilli(1_800_000_000_000))}
	f.reg, err = registry.New(registry.Options{Backend: f.backend, Signer: signer, Clock: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	res, err := identity.New(idc)
	if err != nil {
		t.Fatal(err)
	}
	jwks, _ := keys.Bundle(false, k)
	h, err := httpapi.New(httpapi.Options{Registry: f.reg, Identity: res, JWKS: jwks, Admin: httpapi.Admin{Token: "s3cret"}, Metrics: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewServer(h)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fixture) do(t *testing.T, method, path, owner, contentType, body string, hdr ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	if owner != "" {
		req.Header.Set(idHeader, owner)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func (f *fixture) acquire(t *testing.T, owner, resource, reqID string) fencegate.Lease {
	t.Helper()
	resp := f.do(t, "POST", "/v1/leases", owner, "application/json", `{"resource":"`+resource+`","requestId":"`+reqID+`","ttlMs":1000}`)
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("acquire: %d %s", resp.StatusCode, b)
	}
	var l fencegate.Lease
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		t.Fatal(err)
	}
	return l
}

func meta(t *testing.T, b registry.Backend) registry.Meta {
	m, err := b.Meta(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestProblems(t *testing.T) {
	f := newFixture(t, identity.Config{Mode: identity.ModeInsecureHeader})
	held := f.acquire(t, "worker-a", "inv/1", "req-1")
	big := `{"resource":"inv/2","requestId":"x","opClass":"` + strings.Repeat("a", httpapi.MaxBodyBytes) + `"}`

	cases := []struct {
		name, method, path, owner, ctype, body string
		hdr                                    []string
		status                                 int
		code                                   fencegate.Code
		retryAfter                             bool
	}{
		{"no identity", "POST", "/v1/leases", "", "application/json", `{"resource":"inv/2","requestId":"r"}`, nil, 401, "IDENTITY_REQUIRED", false},
		{"bad identity charset", "POST", "/v1/leases", "worker a", "application/json", `{"resource":"inv/2","requestId":"r"}`, nil, 401, "IDENTITY_REQUIRED", false},
		{"malformed JSON", "POST", "/v1/leases", "worker-b", "application/json", `{"resource":`, nil, 400, "INVALID_REQUEST", false},
		{"unknown field", "POST", "/v1/leases", "worker-b", "application/json", `{"resource":"inv/2","requestId":"r","owner":"worker-a"}`, nil, 400, "INVALID_REQUEST", false},
		{"two JSON values", "POST", "/v1/leases", "worker-b", "application/json", `{"resource":"inv/2","requestId":"r"}{}`, nil, 400, "INVALID_REQUEST", false},
		{"wrong content type", "POST", "/v1/leases", "worker-b", "text/plain", `resource=inv/2`, nil, 415, "UNSUPPORTED_MEDIA_TYPE", false},
		{"oversized body", "POST", "/v1/leases", "worker-b", "application/json", big, nil, 413, "BODY_TOO_LARGE", false},
		{"bad resource", "POST", "/v1/leases", "worker-b", "application/json", `{"resource":"inv/../x","requestId":"r"}`, nil, 400, "INVALID_REQUEST", false},
		{"empty request ID", "POST", "/v1/leases", "worker-b", "application/json", `{"resource":"inv/2","requestId":""}`, nil, 400, "INVALID_REQUEST", false},
		{"negative TTL", "POST", "/v1/leases", "worker-b", "application/json", `{"resource":"inv/2","requestId":"r","ttlMs":-1}`, nil, 400, "INVALID_REQUEST", false},
		{"TTL above max", "POST", "/v1/leases", "worker-b", "application/json", `{"resource":"inv/2","requestId":"r","ttlMs":999999999}`, nil, 400, "INVALID_REQUEST", false},
		{"fence as string", "POST", "/v1/admin/fence-floor", "", "application/json", `{"floor":"9"}`, []string{"Authorization", "Bearer s3cret"}, 400, "INVALID_REQUEST", false},
		{"held", "POST", "/v1/leases", "worker-b", "application/json", `{"resource":"inv/1","requestId":"r"}`, nil, 409, "LEASE_HELD", true},
		{"request ID reused for another resource", "POST", "/v1/leases", "worker-a", "application/json", `{"resource":"inv/9","requestId":"req-1"}`, nil, 409, "REQUEST_CONFLICT", false},
		{"renew by another owner", "POST", "/v1/leases/" + held.Lease + "/renew", "worker-b", "", "", nil, 403, "NOT_OWNER", false},
		{"release by another owner", "POST", "/v1/leases/" + held.Lease + "/release", "worker-b", "", "", nil, 403, "NOT_OWNER", false},
		{"unknown lease", "GET", "/v1/leases/lease-nope/status", "worker-b", "", "", nil, 404, "NOT_FOUND", false},
		{"unknown request", "GET", "/v1/requests/nope", "worker-b", "", "", nil, 404, "NOT_FOUND", false},
		{"bad digest", "GET", "/v1/grants/sha256:zz/status", "", "", "", nil, 400, "INVALID_REQUEST", false},
		{"bad resource read", "GET", "/v1/resources/a//b", "", "", "", nil, 400, "INVALID_REQUEST", false},
		{"admin without token", "POST", "/v1/admin/epoch", "worker-a", "", "", nil, 403, "ADMIN_REQUIRED", false},
		{"admin with a wrong token", "POST", "/v1/admin/epoch", "", "", "", []string{"Authorization", "Bearer nope"}, 403, "ADMIN_REQUIRED", false},
		{"zero floor", "POST", "/v1/admin/fence-floor", "", "application/json", `{"floor":0}`, []string{"Authorization", "Bearer s3cret"}, 400, "INVALID_REQUEST", false},
		{"bad policy", "PUT", "/v1/admin/policies", "", "application/json", `{"pattern":"a b"}`, []string{"Authorization", "Bearer s3cret"}, 400, "INVALID_REQUEST", false},
		{"policy with a generation", "PUT", "/v1/admin/policies", "", "application/json", `{"pattern":"a","generation":7}`, []string{"Authorization", "Bearer s3cret"}, 400, "INVALID_REQUEST", false},
		{"unknown route", "GET", "/v1/nope", "", "", "", nil, 404, "NOT_FOUND", false},
		{"wrong method", "DELETE", "/v1/leases", "worker-a", "", "", nil, 405, "METHOD_NOT_ALLOWED", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := meta(t, f.backend)
			resp := f.do(t, tc.method, tc.path, tc.owner, tc.ctype, tc.body, tc.hdr...)
			if resp.StatusCode != tc.status {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			d, err := fencegate.ReadProblem(resp)
			if err != nil {
				t.Fatal(err)
			}
			if d.Code != tc.code || d.Status != tc.status || d.Type != fencegate.ProblemTypeBase+string(tc.code) {
				t.Fatalf("problem %+v, want code %s", d, tc.code)
			}
			if got := resp.Header.Get("Retry-After") != ""; got != tc.retryAfter {
				t.Fatalf("Retry-After present = %v, want %v", got, tc.retryAfter)
			}
			if after := meta(t, f.backend); after != before {
				t.Fatalf("a rejected request changed the registry: %+v -> %+v", before, after)
			}
		})
	}
}

func TestRenewExpiredCarriesSignedState(t *testing.T) {
	f := newFixture(t, identity.Config{Mode: identity.ModeInsecureHeader})
	l := f.acquire(t, "worker-a", "inv/1", "req-1")
	f.clock.Advance(2 * time.Second)
	resp := f.do(t, "POST", "/v1/leases/"+l.Lease+"/renew", "worker-a", "", "")
	d, err := fencegate.ReadProblem(resp)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 409 || d.Code != "LEASE_NOT_HELD" || d.Extra["state"] != "EXPIRED" || d.Extra["status"] == "" {
		t.Fatalf("renew after expiry: %d %+v", resp.StatusCode, d)
	}
	// Another owner now gets a larger fence; the old lease stays EXPIRED.
	b := f.acquire(t, "worker-b", "inv/1", "req-2")
	if b.FenceToken <= l.FenceToken {
		t.Fatalf("fence %d not above %d", b.FenceToken, l.FenceToken)
	}
}

func TestGrantOnlyForItsOwner(t *testing.T) {
	f := newFixture(t, identity.Config{Mode: identity.ModeInsecureHeader})
	l := f.acquire(t, "worker-a", "inv/1", "req-1")
	if l.Grant == "" || l.Status == "" {
		t.Fatal("the owner got no grant or status")
	}
	for owner, wantGrant := range map[string]bool{"worker-a": true, "worker-b": false, "": false} {
		var got fencegate.Lease
		resp := f.do(t, "GET", "/v1/grants/"+l.GrantDigest+"/status", owner, "", "")
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			t.Fatal(err)
		}
		if (got.Grant != "") != wantGrant || got.Status == "" || got.State != "HELD" {
			t.Errorf("status for %q: grant present %v, want %v; state %s", owner, got.Grant != "", wantGrant, got.State)
		}
	}
}

func TestJWKSPublishesPublicKeysOnly(t *testing.T) {
	f := newFixture(t, identity.Config{Mode: identity.ModeInsecureHeader})
	resp := f.do(t, "GET", "/.well-known/jwks.json", "", "", "")
	var set struct{ Keys []map[string]any }
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
		t.Fatal(err)
	}
	if len(set.Keys) != 1 || set.Keys[0]["kid"] == nil || set.Keys[0]["alg"] != "EdDSA" {
		t.Fatalf("jwks: %+v", set.Keys)
	}
	if _, private := set.Keys[0]["d"]; private {
		t.Fatal("the published JWKS holds a private key")
	}
}

func TestHeaderModeTrustsOnlyConfiguredProxies(t *testing.T) {
	for _, tc := range []struct {
		cidr   string
		status int
	}{{"10.0.0.0/8", 401}, {"127.0.0.0/8", 201}} {
		f := newFixture(t, identity.Config{Mode: identity.ModeHeader, TrustedProxies: []string{tc.cidr}})
		resp := f.do(t, "POST", "/v1/leases", "worker-a", "application/json", `{"resource":"inv/1","requestId":"r"}`)
		if resp.StatusCode != tc.status {
			t.Errorf("trusted %s: status %d, want %d", tc.cidr, resp.StatusCode, tc.status)
		}
	}
}

func TestAdminWithToken(t *testing.T) {
	f := newFixture(t, identity.Config{Mode: identity.ModeInsecureHeader})
	l := f.acquire(t, "worker-a", "inv/1", "req-1")
	resp := f.do(t, "POST", "/v1/admin/epoch", "", "", "", "Authorization", "Bearer s3cret")
	if resp.StatusCode != 200 {
		t.Fatalf("epoch bump: %d", resp.StatusCode)
	}
	var got fencegate.Lease
	json.NewDecoder(f.do(t, "GET", "/v1/leases/"+l.Lease+"/status", "", "", "").Body).Decode(&got)
	if got.State != "REVOKED" {
		t.Fatalf("after an epoch bump the old lease is %s, want REVOKED", got.State)
	}
	b := f.acquire(t, "worker-b", "inv/1", "req-2")
	if b.IssuerEpoch != 2 || b.FenceToken <= l.FenceToken {
		t.Fatalf("new grant epoch %d fence %d", b.IssuerEpoch, b.FenceToken)
	}
}

// TestProfilesNeedAdmin: /debug/pprof/ and /debug/vars answer the admin
// token, and ADMIN_REQUIRED to a worker or a wrong token.
func TestProfilesNeedAdmin(t *testing.T) {
	f := newFixture(t, identity.Config{Mode: identity.ModeInsecureHeader})
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/goroutine", "/debug/vars"} {
		if resp := f.do(t, "GET", path, "", "", "", "Authorization", "Bearer s3cret"); resp.StatusCode != 200 {
			t.Errorf("%s with the admin token: %d", path, resp.StatusCode)
		}
		for _, c := range [][]string{{"worker-a"}, {"", "Authorization", "Bearer nope"}} {
			resp := f.do(t, "GET", path, c[0], "", "", c[1:]...)
			p, err := fencegate.ReadProblem(resp)
			if resp.StatusCode != 403 || err != nil || p.Code != fencegate.CodeAdminRequired {
				t.Errorf("%s as %q %v: %d %v, want 403 ADMIN_REQUIRED", path, c[0], c[1:], resp.StatusCode, err)
			}
		}
	}
}
