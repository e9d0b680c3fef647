package adminapi_test

import (
	"context"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate/internal/routedoc"
	"github.com/fencegate/fencegate/proxy/adminapi"
	"github.com/fencegate/fencegate/store/anchor"
)

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
	routedoc.Check(t, h.(chi.Routes), "../../docs/sidecar-admin-api.md", "the admin listener", "`GET /debug/pprof/`")
}
