package httpapi_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/identity"
)

const bearer = "Bearer s3cret"

// TestAdminRevokeLease: an admin revokes one lease over HTTP; the answer
// says revoked with state REVOKED and a proof but no grant; the owner's
// renewal is then LEASE_NOT_HELD with state REVOKED, its release answers
// REVOKED, another owner acquires at once with a higher fence; a second
// revoke answers revoked false; a non-admin, a missing lease and a
// malformed one are refused with their codes.
func TestAdminRevokeLease(t *testing.T) {
	f := newFixture(t, identity.Config{Mode: identity.ModeInsecureHeader})
	a := f.acquire(t, "worker-a", "inv/1", "req-1")

	if resp := f.do(t, "POST", "/v1/admin/leases/"+a.Lease+"/revoke", "worker-a", "", ""); resp.StatusCode != 403 {
		t.Fatalf("revoke without the admin token: %d", resp.StatusCode)
	}
	ans := decodeAs[fencegate.RevokeAnswer](t, f.do(t, "POST", "/v1/admin/leases/"+a.Lease+"/revoke", "", "", "", "Authorization", bearer), 200)
	if !ans.Revoked || ans.Lease.State != fencegate.StateRevoked || ans.Lease.Grant != "" || ans.Lease.Status == "" || ans.Lease.Lease != a.Lease {
		t.Fatalf("revoke answer %+v: want revoked, REVOKED, a proof and no grant", ans)
	}
	resp := f.do(t, "POST", "/v1/leases/"+a.Lease+"/renew", "worker-a", "", "")
	if d, _ := fencegate.ReadProblem(resp); resp.StatusCode != 409 || d == nil || d.Code != fencegate.CodeLeaseNotHeld || d.Extra["state"] != fencegate.StateRevoked {
		t.Errorf("renew of the revoked lease: %d %+v, want 409 LEASE_NOT_HELD state REVOKED", resp.StatusCode, d)
	}
	if rel := decodeAs[fencegate.Lease](t, f.do(t, "POST", "/v1/leases/"+a.Lease+"/release", "worker-a", "", ""), 200); rel.State != fencegate.StateRevoked {
		t.Errorf("release of the revoked lease answered %s", rel.State)
	}
	if b := f.acquire(t, "worker-b", "inv/1", "req-2"); b.FenceToken <= a.FenceToken {
		t.Errorf("acquire after revoke: fence %d, want above %d", b.FenceToken, a.FenceToken)
	}
	again := decodeAs[fencegate.RevokeAnswer](t, f.do(t, "POST", "/v1/admin/leases/"+a.Lease+"/revoke", "", "application/json", `{"reason":"incident 42"}`, "Authorization", bearer), 200)
	if again.Revoked || again.Lease.State != fencegate.StateRevoked {
		t.Errorf("second revoke: %+v", again)
	}
	for _, c := range []struct {
		path, ctype, body string
		status            int
		code              fencegate.Code
	}{
		{"/v1/admin/leases/lease-missing/revoke", "", "", 404, fencegate.CodeNotFound},
		{"/v1/admin/leases/bad%20lease/revoke", "", "", 400, fencegate.CodeInvalidRequest},
		{"/v1/admin/leases/" + a.Lease + "/revoke", "application/json", `{"why":"x"}`, 400, fencegate.CodeInvalidRequest},
		{"/v1/admin/leases/" + a.Lease + "/revoke", "application/json", `{"reason":"` + strings.Repeat("x", 1025) + `"}`, 400, fencegate.CodeInvalidRequest},
		{"/v1/admin/leases/" + a.Lease + "/revoke", "text/plain", "x", 415, fencegate.CodeUnsupportedMedia},
	} {
		resp := f.do(t, "POST", c.path, "", c.ctype, c.body, "Authorization", bearer)
		if d, _ := fencegate.ReadProblem(resp); resp.StatusCode != c.status || d == nil || d.Code != c.code {
			t.Errorf("POST %s %q: %d %+v, want %d %s", c.path, c.body, resp.StatusCode, d, c.status, c.code)
		}
	}
}

// TestAdminListLeases: the listing over HTTP pages by next, filters, never
// carries a grant, and refuses bad parameters with INVALID_REQUEST.
func TestAdminListLeases(t *testing.T) {
	f := newFixture(t, identity.Config{Mode: identity.ModeInsecureHeader})
	for i, r := range []string{"inv/1", "inv/2", "inv/3", "other/1"} {
		f.acquire(t, "worker-a", r, "req-"+string(rune('a'+i)))
	}
	var got []string
	after := ""
	for range 5 {
		q := url.Values{"prefix": {"inv/"}, "limit": {"2"}}
		if after != "" {
			q.Set("after", after)
		}
		p := decodeAs[fencegate.LeasePage](t, f.do(t, "GET", "/v1/admin/leases?"+q.Encode(), "", "", "", "Authorization", bearer), 200)
		for _, l := range p.Leases {
			if l.Grant != "" {
				t.Errorf("listing carries the grant of %s", l.Lease.Lease)
			}
			got = append(got, l.Resource)
		}
		if after = p.Next; after == "" {
			break
		}
	}
	if strings.Join(got, ",") != "inv/1,inv/2,inv/3" {
		t.Errorf("pages of inv/: %v", got)
	}
	one := decodeAs[fencegate.LeasePage](t, f.do(t, "GET", "/v1/admin/leases?resource=other/1&state=HELD", "", "", "", "Authorization", bearer), 200)
	if len(one.Leases) != 1 || one.Leases[0].Resource != "other/1" || one.Next != "" || !one.Leases[0].EndedAt.IsZero() {
		t.Errorf("listing of other/1: %+v", one)
	}
	held := one.Leases[0]
	f.do(t, "POST", "/v1/leases/"+held.Lease.Lease+"/release", "worker-a", "", "")
	ended := decodeAs[fencegate.LeasePage](t, f.do(t, "GET", "/v1/admin/leases?resource=other/1", "", "", "", "Authorization", bearer), 200)
	if len(ended.Leases) != 1 || ended.Leases[0].State != fencegate.StateReleased || ended.Leases[0].EndedAt.IsZero() {
		t.Errorf("listing of other/1 after its release: %+v, want RELEASED with endedAt", ended)
	}
	empty := f.do(t, "GET", "/v1/admin/leases?prefix=none/", "", "", "", "Authorization", bearer)
	if b, _ := io.ReadAll(empty.Body); !strings.Contains(string(b), `"leases":[]`) {
		t.Errorf("an empty listing is %s, want leases []", b)
	}
	if resp := f.do(t, "GET", "/v1/admin/leases", "worker-a", "", ""); resp.StatusCode != 403 {
		t.Errorf("listing without the admin token: %d", resp.StatusCode)
	}
	for _, q := range []string{"limit=0", "limit=1001", "limit=x", "after=YQ.0", "after=%%", "state=held", "resource=a&prefix=a", "resource=bad%20r", "color=red", "limit=1&limit=2"} {
		resp := f.do(t, "GET", "/v1/admin/leases?"+q, "", "", "", "Authorization", bearer)
		if d, _ := fencegate.ReadProblem(resp); resp.StatusCode != 400 || d == nil || d.Code != fencegate.CodeInvalidRequest {
			t.Errorf("?%s: %d %+v, want 400 INVALID_REQUEST", q, resp.StatusCode, d)
		}
	}
}

// TestAdminFenceFloorAnswer: the fence floor's answer is the documented
// FenceFloorAnswer.
func TestAdminFenceFloorAnswer(t *testing.T) {
	f := newFixture(t, identity.Config{Mode: identity.ModeInsecureHeader})
	ans := decodeAs[fencegate.FenceFloorAnswer](t, f.do(t, "POST", "/v1/admin/fence-floor", "", "application/json", `{"resource":"inv/9","floor":50}`, "Authorization", bearer), 200)
	if ans.Resource.Resource != "inv/9" || ans.Resource.FenceFloor != 50 || ans.Meta.IssuerEpoch != 1 {
		t.Errorf("fence floor answer %+v", ans)
	}
	if l := f.acquire(t, "worker-a", "inv/9", "req-9"); l.FenceToken <= 50 {
		t.Errorf("fence %d after a floor of 50", l.FenceToken)
	}
}

// FuzzAdminLeasesQuery: no query string makes the listing answer 5xx or
// anything but JSON or problem+json.
func FuzzAdminLeasesQuery(f *testing.F) {
	fx := newFixture(f, identity.Config{Mode: identity.ModeInsecureHeader})
	for _, s := range []string{"", "limit=1", "after=YQ.1", "prefix=inv/&state=HELD", "after=%ff", "resource=" + strings.Repeat("a", 600)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		for i := 0; i < len(raw); i++ {
			if raw[i] <= ' ' || raw[i] >= 0x7f {
				return // not a request target (net/http's own 400 answers it)
			}
		}
		req, err := http.NewRequest("GET", fx.srv.URL+"/v1/admin/leases?"+raw, nil)
		if err != nil {
			return
		}
		req.Header.Set("Authorization", bearer)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode >= 500 {
			d, _ := fencegate.ReadProblem(resp)
			t.Fatalf("?%q: %d %+v", raw, resp.StatusCode, d)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" && ct != fencegate.ProblemContentType {
			t.Fatalf("?%q: content type %q", raw, ct)
		}
	})
}
