package routedoc

import (
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
)

// docRoute matches a route as the references write it, in backquotes:
// "`GET /v1/leases/{lease}`", "`DELETE /v1/admin/policies?pattern=P`".
var docRoute = regexp.MustCompile("`(GET|POST|PUT|DELETE|PATCH|HEAD) (/[^`?\\s]*)")

// param is a path parameter as a doc ({lease}) or chi ({lease}, a final
// *) writes it.
var param = regexp.MustCompile(`\{[^}]*\}|\*$`)

// norm is "METHOD /path" with every parameter written {}.
func norm(method, path string) string { return method + " " + param.ReplaceAllString(path, "{}") }

// Served returns the routes h serves but the profiler's, normalised,
// sorted, each once.
func Served(tb testing.TB, h chi.Routes) []string {
	tb.Helper()
	var out []string
	err := chi.Walk(h, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if !strings.HasPrefix(route, "/debug/") {
			out = append(out, norm(method, route))
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Check fails tb for each route h serves that the markdown file doc does
// not document and each route doc documents that h does not serve (what
// names the server in the message), and when doc does not contain
// pprof, the one mention of the profiler's routes.
func Check(tb testing.TB, h chi.Routes, doc, what, pprof string) {
	tb.Helper()
	raw, err := os.ReadFile(doc)
	if err != nil {
		tb.Fatal(err)
	}
	name := strings.TrimLeft(doc, "./") // ../../docs/x.md: docs/x.md
	documented := map[string]bool{}
	for _, m := range docRoute.FindAllStringSubmatch(string(raw), -1) {
		if !strings.HasPrefix(m[2], "/debug/") {
			documented[norm(m[1], m[2])] = true
		}
	}
	served := Served(tb, h)
	for _, r := range served {
		if !documented[r] {
			tb.Errorf("%s does not document %s", name, r)
		}
	}
	for r := range documented {
		if !slices.Contains(served, r) {
			tb.Errorf("%s documents %s, which %s does not serve", name, r, what)
		}
	}
	if !strings.Contains(string(raw), pprof) {
		tb.Errorf("%s does not name the profiler's %s", name, pprof)
	}
}
