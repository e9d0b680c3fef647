package buildinfo_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fencegate/fencegate/internal/buildinfo"
)

func TestCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(buildinfo.Collector("proxy"))
	in := buildinfo.Read()
	want := `# HELP fencegate_build_info Always 1; the labels say which build of fencegate is running (version, VCS revision, Go version) and which component.
# TYPE fencegate_build_info gauge
fencegate_build_info{component="proxy",goversion="` + in.GoVersion + `",revision="` + in.Revision + `",version="` + in.Version + `"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), buildinfo.MetricName); err != nil {
		t.Fatal(err)
	}
}
