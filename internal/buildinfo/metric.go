package buildinfo

import "github.com/prometheus/client_golang/prometheus"

// MetricName is the name of the build information gauge.
const MetricName = "fencegate_build_info"

// Collector is the gauge fencegate_build_info{component, version,
// revision, goversion} = 1 of the running binary (Read), for component
// "proxy" or "registry". Register it on the component's own registry.
func Collector(component string) prometheus.Collector {
	in := Read()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: MetricName,
		Help: "Always 1; the labels say which build of fencegate is running (version, VCS revision, Go version) and which component.",
	}, []string{"component", "version", "revision", "goversion"})
	g.WithLabelValues(component, in.Version, in.Revision, in.GoVersion).Set(1)
	return g
}
