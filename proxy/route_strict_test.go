package proxy

import "testing"

// TestStrictestRouteDecides is the run-time layer against a route of a
// lower mode shadowing an enforced one (Config.Validate refuses such a
// configuration; newRouter alone does not): chi's best match is tested
// against the stricter routes, and the strictest that matches decides,
// with its resource template.
func TestStrictestRouteDecides(t *testing.T) {
	enforced := RouteConfig{Method: "PUT", Path: "/v1/items/{id}", Resource: "item/{id}", Mode: ModeEnforce}
	for _, c := range []struct {
		name      string
		lower     RouteConfig
		path      string
		wantRoute string
		wantRes   string
	}{
		{"the story: an off literal", RouteConfig{Method: "PUT", Path: "/v1/items/42", Resource: "x-42", Mode: ModeOff},
			"/v1/items/42", "PUT /v1/items/{id}", "item/42"},
		{"a shadow literal", RouteConfig{Method: "PUT", Path: "/v1/items/42", Resource: "x-42", Mode: ModeShadow},
			"/v1/items/42", "PUT /v1/items/{id}", "item/42"},
		{"an off regexp parameter", RouteConfig{Method: "PUT", Path: "/v1/items/{n:[0-9]+}", Resource: "n/{n}", Mode: ModeOff},
			"/v1/items/7", "PUT /v1/items/{id}", "item/7"},
		{"an off catch-all", RouteConfig{Method: "PUT", Path: "/v1/items/*", Resource: "any", Mode: ModeOff},
			"/v1/items/7", "PUT /v1/items/{id}", "item/7"},
		// Where only the lower route matches, it still decides.
		{"the catch-all's own path", RouteConfig{Method: "PUT", Path: "/v1/items/*", Resource: "any", Mode: ModeOff},
			"/v1/items/7/parts", "PUT /v1/items/*", "any"},
	} {
		rt, err := newRouter([]RouteConfig{enforced, c.lower})
		if err != nil {
			t.Fatal(err)
		}
		r, res, err := rt.matchPath("PUT", c.path)
		if r == nil || err != nil {
			t.Errorf("%s: PUT %s matched %v, %v", c.name, c.path, r, err)
			continue
		}
		if r.key != c.wantRoute || res != c.wantRes {
			t.Errorf("%s: PUT %s → %s (%s) resource %q, want %s resource %q", c.name, c.path, r.key, r.Mode, res, c.wantRoute, c.wantRes)
		}
	}

	// Shadow beats off where both match; enforce beats both.
	rt, err := newRouter([]RouteConfig{
		{Method: "POST", Path: "/v1/a/{x:[0-9]+}", Resource: "off-{x}", Mode: ModeOff},
		{Method: "POST", Path: "/v1/a/{x}", Resource: "shadow-{x}", Mode: ModeShadow},
		{Method: "POST", Path: "/v1/*", Resource: "off-all", Mode: ModeOff},
	})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"/v1/a/1": "shadow-1", "/v1/a/b": "shadow-b", "/v1/b": "off-all"} {
		if r, res, _ := rt.matchPath("POST", path); r == nil || res != want {
			t.Errorf("POST %s → %v %q, want %q", path, r, res, want)
		}
	}
}
