package proxy_test

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/fencegate/fencegate/proxy"
	"github.com/fencegate/fencegate/store"
)

// TestForcedDowngradeOfALongRoute: the ledger event's detail (which names
// the overlapping route and a path) is cut to the store's limit instead of
// failing the start.
func TestForcedDowngradeOfALongRoute(t *testing.T) {
	prefix := "/v1/" + strings.Repeat("segment/", 100)
	f := newFixture(t, func(c *proxy.Config) {
		c.Routes = append(c.Routes, proxy.RouteConfig{Method: "PATCH", Path: prefix + "{id}", Resource: "long/{id}"})
	})
	f.cfg.Routes = append(f.cfg.Routes[:len(f.cfg.Routes)-1], proxy.RouteConfig{Method: "PATCH", Path: prefix + "*", Resource: "any", Mode: proxy.ModeOff})
	if err := f.start([]string{"PATCH " + prefix + "{id}"}); err != nil {
		t.Fatalf("forced downgrade of a long route: %v", err)
	}
	entries, _ := f.store.Enforcements(context.Background())
	for _, e := range entries {
		if strings.HasPrefix(e.Shape, "PATCH ") {
			last := e.History[len(e.History)-1]
			if last.Kind != store.EnforcementForcedDowngrade || len(last.Detail) > store.MaxEnforcementDetailLen || !utf8.ValidString(last.Detail) {
				t.Fatalf("event %s, detail of %d bytes", last.Kind, len(last.Detail))
			}
			return
		}
	}
	t.Fatal("the long route was never recorded as enforced")
}
