package httpapi_test

import (
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/internal/routedoc"
	"github.com/fencegate/fencegate/keys"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/registry/httpapi"
	"github.com/fencegate/fencegate/registry/memory"
)

// memoryOptions are the Options of a registry on a new memory backend with
// a new EdDSA signing key (kid), insecure-header identity and a metrics
// registry of its own (prom), which is not yet the Gatherer.
func memoryOptions(t *testing.T) (o httpapi.Options, kid string, prom *prometheus.Registry) {
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
	prom = prometheus.NewRegistry()
	return httpapi.Options{Registry: reg, Identity: ident, JWKS: jwks, Metrics: prom}, k.KeyID(), prom
}

// servedRoutes is the registry's chi router with every optional route on
// (/metrics served).
func servedRoutes(t *testing.T) chi.Routes {
	t.Helper()
	o, _, prom := memoryOptions(t)
	o.Gatherer = prom
	h, err := httpapi.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return h.(chi.Routes)
}

// TestRegistryAPIDocListsEveryRoute: docs/registry-api.md names every
// route the registry serves, and no route it does not serve (routes are
// compared by method and path, parameters by position).
func TestRegistryAPIDocListsEveryRoute(t *testing.T) {
	routedoc.Check(t, servedRoutes(t), "../../docs/registry-api.md", "the registry", "/debug/pprof/")
}
