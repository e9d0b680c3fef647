package proxy_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/proxy"
	"github.com/fencegate/fencegate/store"
)

// The fixture's first route, PUT /v1/items/{id}, is enforced.

// TestRouteBelowEnforceCannotShadowAnEnforcedRoute is story 5's first
// case and its variants: a route below enforce added next to the enforced
// PUT /v1/items/{id}, which chi would prefer for some of its paths, is
// refused at start, naming both routes, and --force-downgrade does not
// override it. Before the fix the sidecar started and an ungranted write to
// /v1/items/42 reached the backend.
func TestRouteBelowEnforceCannotShadowAnEnforcedRoute(t *testing.T) {
	for _, lower := range []proxy.RouteConfig{
		{Method: "PUT", Path: "/v1/items/42", Resource: "item/42", Mode: proxy.ModeOff}, // the story
		{Method: "PUT", Path: "/v1/items/42", Resource: "item/42", Mode: proxy.ModeShadow, Status: proxy.RouteStatus{Mode: proxy.StatusProof}},
		{Method: "put", Path: "/v1/items/{n:[0-9]+}", Resource: "n/{n}", Mode: proxy.ModeOff},
		{Method: "PUT", Path: "/*", Resource: "anything", Mode: proxy.ModeOff},
		{Method: "PUT", Path: "/v1/items/*", Resource: "anything", Mode: proxy.ModeShadow, Status: proxy.RouteStatus{Mode: proxy.StatusProof}},
		{Method: "PUT", Path: "/v1/{kind}/{id}", Resource: "k/{kind}/{id}", Mode: proxy.ModeOff},
	} {
		f := newFixture(t)
		f.cfg.Routes = append(f.cfg.Routes, lower)
		err := f.start(nil)
		if err == nil {
			ans := f.do(call{path: "/v1/items/42", body: "ungranted"})
			t.Errorf("%s %s in %s next to the enforced PUT /v1/items/{id}: the sidecar started; an ungranted PUT /v1/items/42 got %d, backend saw %d requests",
				lower.Method, lower.Path, lower.Mode, ans.code, f.back.count())
			continue
		}
		if !errors.Is(err, proxy.ErrRouteShadowed) {
			t.Errorf("%s %s: %v, want ErrRouteShadowed", lower.Method, lower.Path, err)
		}
		for _, name := range []string{"PUT " + lower.Path, "PUT /v1/items/{id}"} {
			if !strings.Contains(err.Error(), name) {
				t.Errorf("%s %s: the error does not name %s: %v", lower.Method, lower.Path, name, err)
			}
		}
		if err := f.start([]string{"PUT /v1/items/{id}", "PUT " + lower.Path}); !errors.Is(err, proxy.ErrRouteShadowed) {
			t.Errorf("%s %s with --force-downgrade: %v, want ErrRouteShadowed", lower.Method, lower.Path, err)
		}
	}
}

// TestDisjointLowerRoutesStart: a lower route that cannot match a path of
// the enforced route is fine.
func TestDisjointLowerRoutesStart(t *testing.T) {
	f := newFixture(t, func(c *proxy.Config) {
		c.Routes[0].Path = "/v1/items/{id:[0-9]+}"
		c.Routes = append(c.Routes,
			proxy.RouteConfig{Method: "PUT", Path: "/v1/items/{name:[a-z]+}", Resource: "named/{name}", Mode: proxy.ModeOff},
			proxy.RouteConfig{Method: "PUT", Path: "/v1/items/{id}/notes", Resource: "notes/{id}", Mode: proxy.ModeOff},
			proxy.RouteConfig{Method: "POST", Path: "/v1/items/{id}", Resource: "post/{id}", Mode: proxy.ModeOff},
		)
	})
	if f.proxy == nil {
		t.Fatalf("a configuration of disjoint routes did not start: %v", f.start(nil))
	}
	f.do(call{path: "/v1/items/abc", body: "x"}).expectStatus(t, 201)
	f.do(call{path: "/v1/items/7", body: "x"}).expect(t, 428, fencegate.CodeGrantRequired)
}

// TestLedgerShapeShadowedByALaterRoute: the enforced route removed and an
// off literal for one of its paths added; the ledger's shape refuses it
// (before the fix the shape's paths were probed with a few fixed values,
// 42 not among them, and the sidecar started). Forced, it starts, the
// downgrade is recorded, and fencegate_proxy_forced_downgrade shows it
// until the shape is enforced again.
func TestLedgerShapeShadowedByALaterRoute(t *testing.T) {
	f := newFixture(t)
	enforced := f.cfg.Routes[0]
	literal := proxy.RouteConfig{Method: "PUT", Path: "/v1/items/42", Resource: "item/42", Mode: proxy.ModeOff}
	f.cfg.Routes = append(f.cfg.Routes[1:], literal)
	err := f.start(nil)
	if err == nil {
		ans := f.do(call{path: "/v1/items/42", body: "ungranted"})
		t.Fatalf("removed enforced route, off literal on one of its paths: the sidecar started; an ungranted PUT got %d, backend saw %d requests", ans.code, f.back.count())
	}
	if !errors.Is(err, proxy.ErrDowngrade) || !strings.Contains(err.Error(), "PUT /v1/items/42") || !strings.Contains(err.Error(), "PUT /v1/items/{}") {
		t.Fatalf("got %v, want ErrDowngrade naming the shape and the route", err)
	}
	if err := f.start([]string{"PUT /v1/items/{id}"}); err != nil {
		t.Fatalf("forced: %v", err)
	}
	entries, _ := f.store.Enforcements(context.Background())
	for _, e := range entries {
		if e.Shape == "PUT /v1/items/{}" && (e.Enforced() || e.History[len(e.History)-1].Kind != store.EnforcementForcedDowngrade) {
			t.Fatalf("ledger entry after the forced downgrade: %+v", e)
		}
	}
	gauge := func() map[string]float64 { return series(t, f.metrics, "fencegate_proxy_forced_downgrade") }
	want := map[string]float64{
		"route=PUT /v1/items/{}":  1, // the removed shape, its path 42 now off
		"route=PUT /v1/items/42":  0, // never enforced itself
		"route=PUT /v1/docs/{id}": 0, "route=POST /v1/shadow/{id}": 0, "route=DELETE /v1/off/{id}": 0,
	}
	if got := gauge(); !equalSeries(got, want) {
		t.Fatalf("fencegate_proxy_forced_downgrade = %v, want %v", got, want)
	}
	// Restarted without the flag: still downgraded, still shown.
	if err := f.start(nil); err != nil {
		t.Fatal(err)
	}
	if got := gauge(); got["route=PUT /v1/items/{}"] != 1 {
		t.Fatalf("after a restart: %v", got)
	}
	// The route enforced again (the literal removed): 0 everywhere.
	f.cfg.Routes = append([]proxy.RouteConfig{enforced}, f.cfg.Routes[:len(f.cfg.Routes)-1]...)
	if err := f.start(nil); err != nil {
		t.Fatal(err)
	}
	for k, v := range gauge() {
		if v != 0 {
			t.Errorf("enforced again: %s = %v", k, v)
		}
	}
}

// TestForcedDowngradeGauge: a configured route forced from enforce to
// shadow shows 1 under its route key, from the first scrape, and keeps
// showing it on later starts.
func TestForcedDowngradeGauge(t *testing.T) {
	f := newFixture(t)
	if got := series(t, f.metrics, "fencegate_proxy_forced_downgrade")["route=PUT /v1/items/{id}"]; got != 0 {
		t.Fatalf("enforced: %v, want 0", got)
	}
	f.cfg.Routes[0].Mode = proxy.ModeShadow
	if err := f.start([]string{"PUT /v1/items/{id}"}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		got := series(t, f.metrics, "fencegate_proxy_forced_downgrade")
		if got["route=PUT /v1/items/{id}"] != 1 || got["route=PUT /v1/docs/{id}"] != 0 {
			t.Fatalf("start %d after the forced downgrade: %v", i, got)
		}
		if err := f.start(nil); err != nil {
			t.Fatal(err)
		}
	}
}

func equalSeries(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func (a answer) expectStatus(t *testing.T, status int) {
	t.Helper()
	if a.code != status {
		t.Fatalf("got %d (%+v), want %d", a.code, a.problem, status)
	}
}
