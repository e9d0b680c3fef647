package e2e

import (
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fencegate/fencegate/internal/redistest"
)

// sidecarHealthRE matches the health listener's address on the sidecar's
// start line.
var sidecarHealthRE = regexp.MustCompile(`\(health (\S+)\)`)

// TestMetricNamesExist starts a real registry and two real sidecars (one
// on a Redis store, one on a bolt store; each with an enforced
// registry-mode route and a shadow proof-mode route) and scrapes every
// /metrics before any request: the registry's on its API port before a
// sidecar even starts, the sidecars' on their health ports, with no
// credentials, as Prometheus does. Every fencegate metric name an
// alert of charts/fencegate/files/alerts.yaml or a query of
// charts/fencegate/files/dashboard.json uses must be in one of these
// scrapes (a histogram's _bucket, _sum and _count by its family). The
// alerts are written with increase() over counters that exist at zero from
// the start; a name missing here is an alert that cannot fire, or fires
// late, and a dashboard panel that stays empty.
func TestMetricNamesExist(t *testing.T) {
	reg := startRegistry(t, "")
	registryFams := scrapedFamilies(t, reg.url+"/metrics")

	back := httptest.NewServer(&legacy{stop: make(chan struct{})})
	t.Cleanup(back.Close)
	redis := redistest.Start(t)
	// Two sidecars: the store decides which metrics exist (a Redis store
	// has the data-loss flag, a bolt store the registry claim).
	sidecarFams := map[string]map[string]string{}
	for _, store := range []string{
		`{backend: redis, service: metricnames-redis, claimIdentity: sidecar, redis: {addr: "` + redis.Addr() + `", prefix: "metricnames"}}`,
		`{backend: bolt, service: metricnames, claimIdentity: sidecar}`,
	} {
		sc := startSidecar(t, `
listen: LISTEN
admin: {listen: ADMIN}
health: {listen: "127.0.0.1:0"}
backend: {url: "`+back.URL+`", timeout: 2s}
routes:
  - {method: PUT, path: "/v1/invoice-batches/{id}", resource: "invoice-batch/{id}", mode: enforce, status: {mode: registry}}
  - {method: POST, path: "/v1/ledgers/{ledger}/entries", resource: "ledger/{ledger}", mode: shadow, status: {mode: proof, maxAge: 2s}}
identity: {mode: insecure-header}
trust: {bundle: "`+filepath.Join(reg.dataDir, "keys", "jwks.json")+`"}
registry: {url: "`+reg.url+`"}
store: `+store+`
dataDir: "`+t.TempDir()+`"
log: {level: warn}
`)
		m := sidecarHealthRE.FindStringSubmatch(sc.Output())
		if m == nil {
			t.Fatalf("the sidecar's start line names no health listener: %q", sc.Stdout())
		}
		sidecarFams[store] = scrapedFamilies(t, "http://"+m[1]+"/metrics")
	}
	scrapes := []map[string]string{registryFams}
	for store, fams := range sidecarFams {
		if len(fams) == 0 {
			t.Fatalf("the sidecar's /metrics (store %s) has no metric family", store)
		}
		scrapes = append(scrapes, fams)
	}
	if len(registryFams) == 0 {
		t.Fatal("the registry's /metrics has no metric family")
	}

	d := loadDashboard(t)
	for _, src := range []struct {
		file  string
		names []string
	}{
		{alertsPath, metricNames(alertExprs(loadAlerts(t))...)},
		{dashboardPath, metricNames(d.queries()...)},
	} {
		var missing []string
		for _, name := range src.names {
			if !slices.ContainsFunc(scrapes, func(f map[string]string) bool { return exposed(f, name) }) {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			t.Errorf("%s uses %d of %d metric names that neither the registry's nor the sidecar's /metrics exposes at start:\n  %s",
				src.file, len(missing), len(src.names), strings.Join(missing, "\n  "))
		}
	}
}
