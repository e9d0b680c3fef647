package proxy

import (
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/fencegate/fencegate"
)

// FuzzRouteMatch: no request path panics the router, and every resource
// it derives is a valid canonical resource ID of the route's template.
func FuzzRouteMatch(f *testing.F) {
	rt, err := newRouter([]RouteConfig{
		{Method: "PUT", Path: "/v1/items/{id}", Resource: "item/{id}"},
		{Method: "POST", Path: "/v1/a/{x}/b/{y}", Resource: "ab/{x}:{y}"},
	})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"/v1/items/1", "/v1/items/a%2Fb", "/v1/items/..", "/v1/a/1/b/2", "/v1/items/%zz", "//v1/items/1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		u, err := url.ParseRequestURI(path)
		if err != nil || !strings.HasPrefix(path, "/") {
			return
		}
		for _, m := range []string{"PUT", "POST"} {
			req := httptest.NewRequest(m, "http://x/", nil)
			req.URL = u
			r, res, err := rt.match(req)
			if r == nil || err != nil {
				continue
			}
			if verr := fencegate.ValidateResource(res); verr != nil {
				t.Fatalf("%s %q gave invalid resource %q: %v", m, path, res, verr)
			}
			if !r.resourceRE.MatchString(res) {
				t.Fatalf("%s %q gave %q, not of template %s", m, path, res, r.Resource)
			}
		}
	})
}
