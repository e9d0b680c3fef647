package proxy

import (
	"strings"
	"testing"
)

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

func TestShapePattern(t *testing.T) {
	for shape, want := range map[string]string{
		"PUT /v1/items/{}":          "/v1/items/{p0}",
		"POST /v1/{}/x/{:[0-9]{3}}": "/v1/{p0}/x/{p1:[0-9]{3}}",
		"DELETE /v1/files/*":        "/v1/files/*",
		"PUT /v1/broken/{id":        "/v1/broken/{id",
	} {
		method, got := shapePattern(shape)
		if method != strings.Fields(shape)[0] || got != want {
			t.Errorf("shapePattern(%s) = %s %s, want %s", shape, method, got, want)
		}
		// Back to the same shape.
		if shapeOf(method+" "+got) != shape {
			t.Errorf("shapeOf(%s %s) = %s, want %s", method, got, shapeOf(method+" "+got), shape)
		}
	}
}
