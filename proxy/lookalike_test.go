package proxy_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/proxy"
)

// raw sends method and target as they are (no client-side cleaning or
// escaping) to the fixture's sidecar and returns the answer.
func (f *fixture) raw(method, target string) answer {
	f.t.Helper()
	conn, err := net.Dial("tcp", f.srv.Listener.Addr().String())
	if err != nil {
		f.t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, method+" "+target+" HTTP/1.1\r\nHost: sidecar\r\n"+idHeader+": worker-a\r\nContent-Length: 5\r\nConnection: close\r\n\r\nwrite"); err != nil {
		f.t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		f.t.Fatalf("%s %q: %v", method, target, err)
	}
	defer resp.Body.Close()
	a := answer{code: resp.StatusCode, header: resp.Header}
	if resp.Header.Get("Content-Type") == fencegate.ProblemContentType {
		if a.problem, err = fencegate.ReadProblem(resp); err != nil {
			f.t.Fatal(err)
		}
	} else {
		b, _ := io.ReadAll(resp.Body)
		a.body = string(b)
	}
	return a
}

// TestUnmatchedPassNeverPassesASpellingOfAProtectedPath is story 5's
// fourth case: with unmatchedMutations: pass, spellings of the enforced
// PUT /v1/items/{id} that many backends treat as the same resource match
// no route; each is refused (ROUTE_NOT_PROTECTED, naming the route) instead
// of reaching the backend unchecked, and so is a path with NUL, control
// characters or invalid UTF-8. Paths that are not such spellings still
// pass.
func TestUnmatchedPassNeverPassesASpellingOfAProtectedPath(t *testing.T) {
	f := newFixture(t, func(c *proxy.Config) { c.UnmatchedMutations = "pass" })
	for _, target := range []string{
		"/v1/items/1/",
		"//v1/items/1",
		"/v1/./items/1",
		"/v1/a/../items/1",
		"/v1//../items/1",
		"/V1/ITEMS/1",
		"/v1/Items/1",
		"/v1/items;v=1/1",
		"/v1/x/..;/items/1",
		`/v1\items\1`,
		"/v1/%69tems/1", // Go's ServeMux routes this to /v1/items/1
		"/v1%2Fitems%2F1",
		"/v1/items%2F1",
		"/v1/%2e/items/1",
		"/v1/x/%2e%2e/items/1",
		"/v1/%2569tems/1",
	} {
		ans := f.raw("PUT", target)
		if ans.code != 403 || ans.problem == nil || ans.problem.Code != fencegate.CodeRouteNotProtected {
			t.Errorf("PUT %s: %d %+v, want 403 ROUTE_NOT_PROTECTED", target, ans.code, ans.problem)
			continue
		}
		if route, _ := ans.problem.Extra["route"].(string); route != "PUT /v1/items/{id}" || !strings.Contains(ans.problem.Detail, "PUT /v1/items/{id}") {
			t.Errorf("PUT %s: the refusal does not name the protected route: %+v", target, ans.problem)
		}
	}
	for _, target := range []string{
		"/v1/items/1%00",
		"/v1/other/%00",
		"/v1%C0%AFitems%C0%AF1", // overlong '/'
		"/v1/other/%C0%AE%C0%AE",
		"/v1/other/%FF",
		"/v1/other%0A",
		"/v1/other/\xff",
	} {
		ans := f.raw("PUT", target)
		// The first is the enforced route's own (INVALID_RESOURCE or
		// GRANT_REQUIRED); every one is refused.
		if ans.code < 400 || ans.problem == nil {
			t.Errorf("PUT %q: %d, want a refusal", target, ans.code)
		}
	}
	if n := f.back.count(); n != 0 {
		t.Fatalf("%d spellings of a protected path reached the backend unchecked (last %s)", n, f.back.last().URL.RequestURI())
	}
	// Not spellings of a protected path: passed.
	for _, target := range []string{"/v1/other/1", "/v1/items", "/v1/items/1/parts", "/v1/itemsx/1", "/v1/items%2F1%2Fparts"} {
		if ans := f.raw("PUT", target); ans.code != 201 {
			t.Errorf("PUT %s: %d %+v, want 201 (passed)", target, ans.code, ans.problem)
		}
	}
	if got := f.counter("fencegate_proxy_mutations_total", "route", "PUT /v1/items/{id}", "code", "ROUTE_NOT_PROTECTED"); got != 16 {
		t.Errorf("refusals counted under the route: %v, want 16", got)
	}
	if got := f.counter("fencegate_proxy_mutations_total", "route", "unmatched", "mode", "pass", "decision", "rejected"); got != 6 {
		t.Errorf("paths without a lenient reading counted: %v, want 6", got)
	}
}

// TestLookalikeThroughLowerRoutes: a mutation matched by an off route is
// not passed when its lenient reading is an enforced route's path; one
// matched by nothing, whose reading is a shadow route's path, is handled
// as that shadow route's refusal (forwarded, counted).
func TestLookalikeThroughLowerRoutes(t *testing.T) {
	f := newFixture(t, func(c *proxy.Config) {
		c.UnmatchedMutations = "pass"
		c.Routes = append(c.Routes, proxy.RouteConfig{Method: "PUT", Path: "/v1/files/*", Resource: "files", Mode: proxy.ModeOff})
	})
	f.raw("PUT", "/v1/files/../items/1").expect(t, 403, fencegate.CodeRouteNotProtected)
	f.raw("PUT", "/v1/files/%2e%2e/items/1").expect(t, 403, fencegate.CodeRouteNotProtected)
	f.raw("PUT", "/v1/files/a%00").expect(t, 403, fencegate.CodeRouteNotProtected)
	if f.back.count() != 0 {
		t.Fatal("a look-alike of the enforced route passed through the off route")
	}
	if ans := f.raw("PUT", "/v1/files/a/b"); ans.code != 201 {
		t.Fatalf("the off route's own path: %d", ans.code)
	}
	if ans := f.raw("POST", "/v1/shadow/1/"); ans.code != 201 {
		t.Fatalf("a look-alike of a shadow route: %d %+v, want forwarded", ans.code, ans.problem)
	}
	if got := f.counter("fencegate_proxy_shadow_would_reject_total", "route", "POST /v1/shadow/{id}", "code", "ROUTE_NOT_PROTECTED"); got != 1 {
		t.Fatalf("shadow would-reject count %v, want 1", got)
	}
}
