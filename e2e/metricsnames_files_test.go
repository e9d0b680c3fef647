package e2e

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestAlertsFile checks alerts.yaml without running anything: it parses as
// a PrometheusRule spec, every rule is an alert with a unique name, an
// expression naming a fencegate metric, a known severity, a summary, and a
// runbook_url whose anchor is a heading of docs/operations.md.
func TestAlertsFile(t *testing.T) {
	a := loadAlerts(t)
	anchors := markdownAnchors(t, opsGuidePath)
	severities := map[string]bool{"page": true, "warning": true, "ticket": true, "info": true}
	seen := map[string]bool{}
	n := 0
	for _, g := range a.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			t.Errorf("group %q: a group needs a name and rules", g.Name)
		}
		for _, r := range g.Rules {
			n++
			if r.Alert == "" || r.Record != "" {
				t.Errorf("group %s: rule %q is not an alert", g.Name, r.Record)
				continue
			}
			if seen[r.Alert] {
				t.Errorf("alert %s defined twice", r.Alert)
			}
			seen[r.Alert] = true
			if len(metricNames(r.Expr)) == 0 {
				t.Errorf("alert %s: expression names no fencegate metric: %q", r.Alert, r.Expr)
			}
			if !severities[r.Labels["severity"]] {
				t.Errorf("alert %s: severity %q, want page, warning, ticket or info", r.Alert, r.Labels["severity"])
			}
			if r.Annotations["summary"] == "" {
				t.Errorf("alert %s: no summary", r.Alert)
			}
			anchor, ok := strings.CutPrefix(r.Annotations["runbook_url"], runbookPrefix)
			if !ok || anchor == "" {
				t.Errorf("alert %s: runbook_url %q does not start with %s", r.Alert, r.Annotations["runbook_url"], runbookPrefix)
			} else if !anchors[anchor] {
				t.Errorf("alert %s: runbook anchor #%s is no heading of %s", r.Alert, anchor, opsGuidePath)
			}
		}
	}
	if n < 10 {
		t.Errorf("only %d alerts", n)
	}
}

// TestDashboardFile checks dashboard.json without running anything: it
// parses, panel ids are unique, every panel queries the ${datasource}
// variable with a PromQL expression, and the namespace, pod and route
// variables exist.
func TestDashboardFile(t *testing.T) {
	d := loadDashboard(t)
	if d.Title == "" || d.UID == "" || d.SchemaVersion < 36 {
		t.Errorf("title %q uid %q schemaVersion %d: want a title, a uid and a recent schema", d.Title, d.UID, d.SchemaVersion)
	}
	ids := map[int]string{}
	panels := d.allPanels()
	for _, p := range panels {
		if p.ID == nil {
			t.Errorf("panel %q has no id", p.Title)
			continue
		}
		if other, dup := ids[*p.ID]; dup {
			t.Errorf("panel id %d used by %q and %q", *p.ID, other, p.Title)
		}
		ids[*p.ID] = p.Title
		if p.Type == "row" {
			continue
		}
		if p.Title == "" || len(p.Targets) == 0 {
			t.Errorf("panel %d %q: needs a title and queries", *p.ID, p.Title)
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %d %q: datasource %+v, want uid ${datasource}", *p.ID, p.Title, p.Datasource)
		}
		for _, tg := range p.Targets {
			if len(metricNames(tg.Expr)) == 0 {
				t.Errorf("panel %d %q: query names no fencegate metric: %q", *p.ID, p.Title, tg.Expr)
			}
			if tg.Datasource == nil || tg.Datasource.UID != "${datasource}" {
				t.Errorf("panel %d %q: a target's datasource is not ${datasource}", *p.ID, p.Title)
			}
		}
	}
	if len(panels) < 20 {
		t.Errorf("only %d panels", len(panels))
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	for name, typ := range map[string]string{"datasource": "datasource", "namespace": "query", "pod": "query", "route": "query"} {
		if vars[name] != typ {
			t.Errorf("template variable %s: type %q, want %q", name, vars[name], typ)
		}
	}
}

// TestOperationsGuide checks docs/operations.md: every problem code of
// code.go is explained, and every in-page link points at a heading.
func TestOperationsGuide(t *testing.T) {
	raw, err := os.ReadFile(opsGuidePath)
	if err != nil {
		t.Fatal(err)
	}
	guide := string(raw)
	for _, c := range problemCodes(t) {
		if !strings.Contains(guide, "| `"+c+"` |") {
			t.Errorf("code %s has no row in %s's code tables", c, opsGuidePath)
		}
	}
	anchors := markdownAnchors(t, opsGuidePath)
	for _, m := range regexp.MustCompile(`\]\(#([^)]+)\)`).FindAllStringSubmatch(guide, -1) {
		if !anchors[m[1]] {
			t.Errorf("link to #%s: no such heading", m[1])
		}
	}
}

// TestMetricNameParsing pins the name extraction the live check relies on.
func TestMetricNameParsing(t *testing.T) {
	got := metricNames(
		`histogram_quantile(0.99, sum by (le) (rate(fencegate_proxy_verify_seconds_bucket{pod=~"$pod"}[5m])))`,
		`max_over_time(fencegate_build_info{component="registry"}[1h]) and on (job) (up == 0)`,
		`label_values(fencegate_proxy_mutations_total{namespace=~"$namespace"}, route)`,
		`up{job="my_fencegate_thing"} + notfencegate_x`,
	)
	want := []string{"fencegate_build_info", "fencegate_proxy_mutations_total", "fencegate_proxy_verify_seconds_bucket"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("metricNames = %v, want %v", got, want)
	}
	fams := map[string]string{"fencegate_proxy_verify_seconds": "histogram", "fencegate_x_total": "counter"}
	for name, want := range map[string]bool{
		"fencegate_proxy_verify_seconds_bucket": true,
		"fencegate_proxy_verify_seconds_count":  true,
		"fencegate_proxy_verify_seconds":        true,
		"fencegate_x_total":                     true,
		"fencegate_x_total_count":               false, // a counter has no _count series
		"fencegate_proxy_verify":                false,
	} {
		if exposed(fams, name) != want {
			t.Errorf("exposed(%s) = %v, want %v", name, !want, want)
		}
	}
}
