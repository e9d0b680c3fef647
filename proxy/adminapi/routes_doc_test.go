package adminapi_test

import (
	"context"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate/proxy/adminapi"
	"github.com/fencegate/fencegate/store/anchor"
)

// docRoute matches a route as docs/sidecar-admin-api.md writes it, in
// backquotes: "`GET /v1/receipts/{id}?resource=R`".
var docRoute = regexp.MustCompile("`(GET|POST|PUT|DELETE|PATCH|HEAD) (/[^`?\\s]*)")

// param is a path parameter as the doc ({id}) or chi ({id}, a final *)
// writes it.
var param = regexp.MustCompile(`\{[^}]*\}|\*$`)

func normRoute(method, path string) string { return method + " " + param.ReplaceAllString(path, "{}") }

// anchoredStore turns on the routes of a store anchored at the registry
// (/v1/store...). Only the routes are walked: nothing calls it.
type anchoredStore struct{}

func (anchoredStore) Lost() error                         { return nil }
func (anchoredStore) CheckLoss(ctx context.Context) error { return nil }
func (anchoredStore) Report() anchor.LossReport           { return anchor.LossReport{} }

// TestSidecarAdminDocListsEveryRoute: docs/sidecar-admin-api.md lists
// every route the admin listener serves with every optional route on
// (metrics, an anchored store), and no route it does not serve; the
// profiler's routes are named once (/debug/pprof/).
func TestSidecarAdminDocListsEveryRoute(t *testing.T) {
	prom := prometheus.NewRegistry()
	h, err := adminapi.New(adminapi.Options{Proxy: newProxy(t), Gatherer: prom, Store: anchoredStore{}})
	if err != nil {
		t.Fatal(err)
	}
	var served []string
	err = chi.Walk(h.(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if !strings.HasPrefix(route, "/debug/") {
			served = append(served, normRoute(method, route))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("../../docs/sidecar-admin-api.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := map[string]bool{}
	for _, m := range docRoute.FindAllStringSubmatch(string(raw), -1) {
		if !strings.HasPrefix(m[2], "/debug/") {
			doc[normRoute(m[1], m[2])] = true
		}
	}
	for _, r := range served {
		if !doc[r] {
			t.Errorf("docs/sidecar-admin-api.md does not document %s", r)
		}
	}
	for r := range doc {
		if !slices.Contains(served, r) {
			t.Errorf("docs/sidecar-admin-api.md documents %s, which the admin listener does not serve", r)
		}
	}
	if !strings.Contains(string(raw), "`GET /debug/pprof/`") {
		t.Error("docs/sidecar-admin-api.md does not name the profiler's GET /debug/pprof/")
	}
}
