package proxy_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/proxy"
	"github.com/fencegate/fencegate/store/memory"
	"github.com/fencegate/fencegate/verify/verifytest"
)

// contractCodes are the sidecar's codes of docs/design.md's table 5.1.
func contractCodes(t *testing.T) []fencegate.Code {
	t.Helper()
	raw, err := os.ReadFile("../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	start, end := strings.Index(doc, "### 5.1"), strings.Index(doc, "### 5.2")
	if start < 0 || end < start {
		t.Fatal("docs/design.md has no section 5.1")
	}
	var codes []fencegate.Code
	for _, m := range regexp.MustCompile("(?m)^\\| `([A-Z_]+)` \\|").FindAllStringSubmatch(doc[start:end], -1) {
		if c := fencegate.Code(m[1]); !slices.Contains(codes, c) {
			codes = append(codes, c)
		}
	}
	if len(codes) < 20 {
		t.Fatalf("only %d codes found in section 5.1: %v", len(codes), codes)
	}
	return codes
}

// series returns the label sets of metric name in reg, each as
// "k=v,k=v" in label order, with the value.
func series(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var kv []string
			for _, l := range m.GetLabel() {
				kv = append(kv, l.GetName()+"="+l.GetValue())
			}
			out[strings.Join(kv, ",")] = value(m)
		}
	}
	return out
}

func value(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	}
	return -1
}

// TestDecisionSeriesExistAtZero: right after New, before any request,
// every code of the contract (design 5.1) a route can be refused with
// exists at 0 for every configured route in
// fencegate_proxy_mutations_total (enforce: rejected; shadow: passed) and
// fencegate_proxy_shadow_would_reject_total (shadow routes), and so do
// the other decisions of each mode, the unmatched mutations' and the read
// path's refusals; fencegate_build_info says component="proxy".
func TestDecisionSeriesExistAtZero(t *testing.T) {
	bundle := verifytest.BundleFile(t, verifytest.NewIssuer(t, jwa.EdDSA))
	cfg := proxy.Config{
		Backend: proxy.BackendConfig{URL: "http://127.0.0.1:1", Timeout: time.Minute},
		Routes: []proxy.RouteConfig{
			{Method: "PUT", Path: "/v1/a/{id}", Resource: "a/{id}", Status: proxy.RouteStatus{Mode: proxy.StatusProof}},
			{Method: "post", Path: "/v1/b/{id}", Resource: "b/{id}", Mode: proxy.ModeShadow, Status: proxy.RouteStatus{Mode: proxy.StatusProof}},
			{Method: "DELETE", Path: "/v1/c/{id}", Resource: "c/{id}", Mode: proxy.ModeOff, Status: proxy.RouteStatus{Mode: proxy.StatusProof}},
		},
		UnmatchedMutations: "pass",
		Identity:           identity.Config{Mode: identity.ModeInsecureHeader},
		Trust:              proxy.TrustConfig{Bundle: bundle},
	}
	st := memory.New(memory.Options{})
	t.Cleanup(func() { _ = st.Close() })
	reg := prometheus.NewRegistry()
	if _, err := proxy.New(proxy.Options{Config: cfg, Store: st, Metrics: reg}); err != nil {
		t.Fatal(err)
	}
	muts := series(t, reg, "fencegate_proxy_mutations_total")
	would := series(t, reg, "fencegate_proxy_shadow_would_reject_total")
	want := func(got map[string]float64, labels string) {
		t.Helper()
		if v, ok := got[labels]; !ok || v != 0 {
			t.Errorf("series {%s}: %v, present %v; want 0", labels, v, ok)
		}
	}
	readPath := []fencegate.Code{fencegate.CodeMethodOverrideRefused, fencegate.CodeUpgradeRefused}
	for _, c := range contractCodes(t) {
		if c == fencegate.CodeReplayIncomplete {
			continue // an accepted segment's replay: counted as replayed
		}
		if slices.Contains(readPath, c) {
			want(muts, "code="+string(c)+",decision=rejected,mode=reject,route=read-path")
			continue
		}
		if !slices.Contains(proxy.RouteRejectionCodes, c) {
			t.Errorf("%s (design 5.1) is not in proxy.RouteRejectionCodes", c)
		}
		want(muts, "code="+string(c)+",decision=rejected,mode=enforce,route=PUT /v1/a/{id}")
		want(muts, "code="+string(c)+",decision=passed,mode=shadow,route=POST /v1/b/{id}")
		want(would, "code="+string(c)+",route=POST /v1/b/{id}")
		if _, ok := would["code="+string(c)+",route=PUT /v1/a/{id}"]; ok {
			t.Errorf("an enforce route has shadow_would_reject series")
		}
	}
	want(muts, "code=,decision=forwarded,mode=enforce,route=PUT /v1/a/{id}")
	want(muts, "code=,decision=replayed,mode=enforce,route=PUT /v1/a/{id}")
	want(muts, "code=,decision=forwarded,mode=shadow,route=POST /v1/b/{id}")
	want(muts, "code=REPLAY,decision=passed,mode=shadow,route=POST /v1/b/{id}")
	want(muts, "code=,decision=passed,mode=off,route=DELETE /v1/c/{id}")
	want(muts, "code=,decision=passed,mode=pass,route=unmatched")
	want(muts, "code=ROUTE_NOT_PROTECTED,decision=rejected,mode=reject,route=unmatched")
	// Look-alike refusals of unmatched mutations (passed otherwise) and of
	// an off route's (lenient.go).
	want(muts, "code=ROUTE_NOT_PROTECTED,decision=rejected,mode=pass,route=unmatched")
	want(muts, "code=ROUTE_NOT_PROTECTED,decision=rejected,mode=off,route=DELETE /v1/c/{id}")
	forced := series(t, reg, "fencegate_proxy_forced_downgrade")
	for _, r := range []string{"PUT /v1/a/{id}", "POST /v1/b/{id}", "DELETE /v1/c/{id}"} {
		want(forced, "route="+r)
	}
	for _, m := range []string{"enforce", "shadow", "off", "unmatched", "upgrade", "unmarked"} {
		for _, auth := range []string{"passed", "skipped"} {
			for _, fence := range []string{"passed", "skipped"} {
				want(series(t, reg, "fencegate_proxy_backend_mutations_total"), "auth="+auth+",fence="+fence+",mode="+m)
			}
		}
	}
	bi := series(t, reg, "fencegate_build_info")
	if len(bi) != 1 {
		t.Fatalf("fencegate_build_info: %v", bi)
	}
	for labels, v := range bi {
		if v != 1 || !strings.HasPrefix(labels, "component=proxy,goversion=go") {
			t.Fatalf("fencegate_build_info{%s} %v", labels, v)
		}
	}
}
