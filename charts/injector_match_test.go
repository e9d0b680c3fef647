package charts_test

import (
	"encoding/json"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fencegate/fencegate/inject"
)

// TestInjectedSidecarMatchesChart: the container the injector adds is the
// one the chart's "fencegate.sidecar.container" renders for the same
// choices, and so are its volumes: the example's bolt scenario (native, a
// Secret certificate, the trust ConfigMap, a claim) and its postgres
// scenario (an emptyDir, the DSN's Secret and the database's CA as
// fencegate.io/postgres-secret and postgres-tls): image, arguments, ports,
// probes, security context and mounts. A change to one that is not made to
// the other fails, a Secret mounted by one and not the other too.
func TestInjectedSidecarMatchesChart(t *testing.T) {
	tl := needTools(t)
	dir := copyExample(t)
	cases := map[string]func(vols map[string]any) map[string]string{
		"bolt": func(vols map[string]any) map[string]string {
			return map[string]string{inject.AnnotationData: "claim/" + dig(vols["fencegate-data"], "persistentVolumeClaim", "claimName").(string)}
		},
		"postgres": func(vols map[string]any) map[string]string {
			if dig(vols["fencegate-data"], "emptyDir") == nil {
				t.Fatalf("the postgres scenario's data volume is not an emptyDir: %v", vols["fencegate-data"])
			}
			return map[string]string{
				inject.AnnotationData:           "emptyDir",
				inject.AnnotationPostgresSecret: dig(vols["fencegate-postgres"], "secret", "secretName").(string),
				inject.AnnotationPostgresTLS:    dig(vols["fencegate-postgres-tls"], "secret", "secretName").(string),
			}
		},
	}
	for scenario, annotate := range cases {
		t.Run(scenario, func(t *testing.T) {
			manifest, err := runHelm(t, tl, "template", release, dir, "-n", "billing", "-f", dir+"/ci/"+scenario+"-values.yaml")
			if err != nil {
				t.Fatal(err)
			}
			objs := parseManifests(t, manifest)
			spec := podSpec(find(objs, "Deployment")[0])
			var chart map[string]any
			for _, c := range list(spec["initContainers"]) {
				if dig(c, "name") == inject.ContainerName {
					chart = c.(map[string]any)
				}
			}
			if chart == nil {
				t.Fatal("the example's pod has no native fencegate sidecar")
			}
			vols := map[string]any{}
			for _, v := range list(spec["volumes"]) {
				vols[dig(v, "name").(string)] = v
			}
			a := map[string]string{
				inject.AnnotationInject: "true",
				inject.AnnotationConfig: dig(vols["fencegate-config"], "configMap", "name").(string),
				inject.AnnotationTrust:  "configmap/" + dig(vols["fencegate-trust"], "configMap", "name").(string),
				inject.AnnotationTLS:    "secret/" + dig(vols["fencegate-tls"], "secret", "secretName").(string),
			}
			for k, v := range annotate(vols) {
				a[k] = v
			}
			compareInjected(t, a, chart, vols)
		})
	}
}

// compareInjected plans the injection for a pod with the annotations and
// compares its container and volumes with the chart's.
func compareInjected(t *testing.T, annotations map[string]string, chart map[string]any, vols map[string]any) {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "billing-api", Image: "x"}}}}
	cfg := inject.Config{Image: chart["image"].(string)}
	cfg.SetDefaults()
	outcome, ops, err := inject.Plan(pod, cfg, true)
	if err != nil || outcome != inject.Injected {
		t.Fatalf("Plan: %v, %v", outcome, err)
	}
	injected := normalize(t, ops[0].Value.([]corev1.Container)[0])
	chart = normalize(t, chart).(map[string]any)
	for _, key := range []string{"name", "image", "imagePullPolicy", "restartPolicy", "args", "ports",
		"startupProbe", "livenessProbe", "readinessProbe", "securityContext", "volumeMounts"} {
		if got, want := injected.(map[string]any)[key], chart[key]; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the injector adds %v, the chart renders %v", key, got, want)
		}
	}
	added := 0
	for _, op := range ops[1:] {
		if op.Path != "/spec/volumes" {
			continue
		}
		for _, v := range op.Value.([]corev1.Volume) {
			added++
			if got, want := normalize(t, v), normalize(t, vols[v.Name]); !reflect.DeepEqual(got, want) {
				t.Errorf("volume %s: the injector adds %v, the chart renders %v", v.Name, got, want)
			}
		}
	}
	if added != len(vols) {
		t.Errorf("the injector adds %d volumes, the chart renders %d", added, len(vols))
	}
}

// normalize round-trips a value through JSON, so a typed object and a
// decoded YAML tree compare alike.
func normalize(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
