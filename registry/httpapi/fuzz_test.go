package httpapi_test

import (
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
