package proxy

import "testing"

func TestRouteShape(t *testing.T) {
	for _, c := range []struct{ method, path, want string }{
		{"PUT", "/v1/items/{id}", "PUT /v1/items/{}"},
		{"put", "/v1/items/{itemId}", "PUT /v1/items/{}"},
		{"POST", "/v1/{a}/x/{b}", "POST /v1/{}/x/{}"},
		{"PUT", "/v1/items/{id:[0-9]{3}}", "PUT /v1/items/{:[0-9]{3}}"},
		{"DELETE", "/v1/files/*", "DELETE /v1/files/*"},
		{"PUT", "/v1/broken/{id", "PUT /v1/broken/{id"},
	} {
		if got := routeShape(c.method, c.path); got != c.want {
			t.Errorf("routeShape(%s, %s) = %q, want %q", c.method, c.path, got, c.want)
		}
	}
	if shapeOf("PUT /v1/items/{other}") != "PUT /v1/items/{}" {
		t.Error("shapeOf of a route key")
	}
}

func TestProbePaths(t *testing.T) {
	if p := probePaths("PUT /v1/items/{}"); len(p) == 0 || p[0] != "/v1/items/fencegate-ledger-probe" {
		t.Errorf("probes %v", p)
	}
	if p := probePaths("PUT /v1/items/{:[0-9]+}"); len(p) == 0 || p[0] != "/v1/items/0" {
		t.Errorf("regexp probes %v", p)
	}
	if p := probePaths("PUT /v1/items/{:[a-f]{40}}"); len(p) != 0 {
		t.Errorf("unsatisfiable probes %v", p)
	}
}
