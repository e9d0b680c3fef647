package httpapi_test

import (
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/keys"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/registry/memory"
)

// docRoute matches a route as docs/registry-api.md writes it, in
// backquotes: "`GET /v1/leases/{lease}`", "`DELETE /v1/admin/policies?pattern=P`".
var docRoute = regexp.MustCompile("`(GET|POST|PUT|DELETE|PATCH) (/[^`?\\s]*)")

// param is a path parameter as the doc ({lease}) or chi ({lease}, *)
// writes it.
var param = regexp.MustCompile(`\{[^}]*\}|\*$`)

// normRoute is "METHOD /path" with every parameter written {}.
func normRoute(method, path string) string { return method + " " + param.ReplaceAllString(path, "{}") }

// servedRoutes walks the registry's chi router (every optional route on:
// /metrics served) and returns its routes but the profiler's, which the
// doc names once (/debug/pprof/).
func servedRoutes(t *testing.T) []string {
	t.Helper()
	k, err := keys.Generate(jwa.EdDSA, nil)
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := keys.NewSigner(k)
	reg, err := registry.New(registry.Options{Backend: memory.NewBackend(), Signer: signer})
	if err != nil {
		t.Fatal(err)
	}
	ident, err := identity.New(identity.Config{Mode: identity.ModeInsecureHeader})
	if err != nil {
		t.Fatal(err)
	}
	jwks, _ := keys.Bundle(false, k)
	prom := prometheus.NewRegistry()
	h, err := httpapi.New(httpapi.Options{Registry: reg, Identity: ident, JWKS: jwks, Metrics: prom, Gatherer: prom})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	err = chi.Walk(h.(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if !strings.HasPrefix(route, "/debug/") {
			out = append(out, normRoute(method, route))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestRegistryAPIDocListsEveryRoute: docs/registry-api.md names every
// route the registry serves, and no route it does not serve (routes are
// compared by method and path, parameters by position).
func TestRegistryAPIDocListsEveryRoute(t *testing.T) {
	raw, err := os.ReadFile("../../docs/registry-api.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := map[string]bool{}
	for _, m := range docRoute.FindAllStringSubmatch(string(raw), -1) {
		doc[normRoute(m[1], m[2])] = true
	}
	served := servedRoutes(t)
	for _, r := range served {
		if !doc[r] {
			t.Errorf("docs/registry-api.md does not document %s", r)
		}
	}
	for r := range doc {
		if !slices.Contains(served, r) {
			t.Errorf("docs/registry-api.md documents %s, which the registry does not serve", r)
		}
	}
	if !strings.Contains(string(raw), "/debug/pprof/") {
		t.Error("docs/registry-api.md does not name the profiler's /debug/pprof/")
	}
}
