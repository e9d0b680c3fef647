package webhook_test

import (
	"encoding/json"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/fencegate/fencegate/inject"
	"github.com/fencegate/fencegate/inject/webhook"
)

// TestInjectNative: an annotated pod on a cluster with native sidecars
// gets the sidecar as its first init container with restartPolicy
// Always, its volumes, fsGroup for the claim and the injected marker;
// the patched pod decodes strictly and passes the chart's validator.
func TestInjectNative(t *testing.T) {
	h := webhook.New(config(t), webhook.WithNative(true))
	body := review(t, nil)
	pod, raw := patched(t, body, answer(t, h, body))
	c, init, i := findContainer(pod, inject.ContainerName)
	if c == nil || !init || i != 0 {
		t.Fatalf("fencegate: found %v, init %v, index %d; want init container 0", c != nil, init, i)
	}
	if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Errorf("restartPolicy %v, want Always (a native sidecar)", c.RestartPolicy)
	}
	if c.Image != image || strings.Join(c.Args, " ") != "proxy --config /etc/fencegate/config/proxy.yaml" {
		t.Errorf("image %s args %v", c.Image, c.Args)
	}
	checkSecurity(t, c)
	if len(pod.Spec.Containers) != 1 || pod.Spec.Containers[0].Name != "billing-api" {
		t.Errorf("the app's containers changed: %v", pod.Spec.Containers)
	}
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		vols[v.Name] = v
	}
	if v := vols["fencegate-config"]; v.ConfigMap == nil || v.ConfigMap.Name != "billing-fencegate-sidecar" {
		t.Errorf("config volume %+v", v)
	}
	if v := vols["fencegate-trust"]; v.ConfigMap == nil || v.ConfigMap.Name != inject.DefaultTrustConfigMap {
		t.Errorf("trust volume %+v, want the guide's ConfigMap fencegate-trust", v)
	}
	if v := vols["fencegate-tls"]; v.Secret == nil || v.Secret.SecretName != "billing-api-fencegate-tls" {
		t.Errorf("tls volume %+v", v)
	}
	if v := vols["fencegate-data"]; v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "billing-fencegate-sidecar-store" {
		t.Errorf("data volume %+v", v)
	}
	if _, ok := vols["kube-api-access-x7k2p"]; !ok {
		t.Error("the pod's own volume is gone")
	}
	if sc := pod.Spec.SecurityContext; sc == nil || sc.FSGroup == nil || *sc.FSGroup != inject.RunAsID {
		t.Errorf("pod securityContext %+v, want fsGroup %d (the claim writable by the sidecar)", sc, inject.RunAsID)
	}
	if pod.Annotations[inject.AnnotationInjected] != image {
		t.Errorf("marker %q", pod.Annotations[inject.AnnotationInjected])
	}
	validate(t, raw)
}

// TestInjectRegular: with native sidecars off, and with a pod's
// fencegate.io/native "false", the sidecar is the last regular container.
func TestInjectRegular(t *testing.T) {
	cases := map[string]struct {
		native bool
		edit   func(req, pod map[string]any)
	}{
		"cluster without native sidecars": {false, nil},
		"pod opts out of native": {true, func(_, pod map[string]any) {
			annotations(pod)[inject.AnnotationNative] = "false"
		}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			h := webhook.New(config(t), webhook.WithNative(c.native))
			body := review(t, c.edit)
			pod, raw := patched(t, body, answer(t, h, body))
			ct, init, i := findContainer(pod, inject.ContainerName)
			if ct == nil || init || i != len(pod.Spec.Containers)-1 {
				t.Fatalf("fencegate: found %v, init %v, index %d; want the last container", ct != nil, init, i)
			}
			if ct.RestartPolicy != nil {
				t.Errorf("restartPolicy %v on a regular container", *ct.RestartPolicy)
			}
			if len(pod.Spec.InitContainers) != 0 {
				t.Errorf("init containers %v", pod.Spec.InitContainers)
			}
			validate(t, raw)
		})
	}
}

// TestInjectBeforeOtherInitContainers: a native sidecar goes first, the
// pod's own init containers follow in their order.
func TestInjectBeforeOtherInitContainers(t *testing.T) {
	h := webhook.New(config(t), webhook.WithNative(true))
	body := review(t, func(_, pod map[string]any) {
		spec := pod["spec"].(map[string]any)
		spec["initContainers"] = []any{map[string]any{"name": "migrate", "image": "registry.example.org/billing-api:1.0.0", "args": []any{"migrate"}}}
	})
	pod, raw := patched(t, body, answer(t, h, body))
	if n := len(pod.Spec.InitContainers); n != 2 || pod.Spec.InitContainers[0].Name != "fencegate" || pod.Spec.InitContainers[1].Name != "migrate" {
		t.Fatalf("init containers %d: %v", n, pod.Spec.InitContainers)
	}
	validate(t, raw)
}

// TestInjectOtherSources: trust from a Secret, certificates from
// csi-driver-spiffe, an emptyDir data directory (a Redis store), an admin
// token and a Redis password.
func TestInjectOtherSources(t *testing.T) {
	h := webhook.New(config(t), webhook.WithNative(true))
	body := review(t, func(_, pod map[string]any) {
		a := annotations(pod)
		a[inject.AnnotationTrust] = "secret/fencegate-trust-hs"
		a[inject.AnnotationTLS] = "spiffe-csi"
		a[inject.AnnotationData] = "emptyDir"
		a[inject.AnnotationAdminSecret] = "billing-fencegate-admin"
		a[inject.AnnotationRedisSecret] = "billing-redis"
		delete(pod["spec"].(map[string]any), "securityContext")
	})
	pod, raw := patched(t, body, answer(t, h, body))
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		vols[v.Name] = v
	}
	if v := vols["fencegate-tls"]; v.CSI == nil || v.CSI.Driver != "spiffe.csi.cert-manager.io" || v.CSI.ReadOnly == nil || !*v.CSI.ReadOnly {
		t.Errorf("tls volume %+v, want csi-driver-spiffe read-only", v)
	}
	if v := vols["fencegate-trust"]; v.Secret == nil || v.Secret.SecretName != "fencegate-trust-hs" {
		t.Errorf("trust volume %+v", v)
	}
	if v := vols["fencegate-data"]; v.EmptyDir == nil {
		t.Errorf("data volume %+v, want an emptyDir", v)
	}
	for _, n := range []string{"fencegate-admin", "fencegate-redis"} {
		if vols[n].Secret == nil {
			t.Errorf("no Secret volume %s", n)
		}
	}
	if pod.Spec.SecurityContext != nil {
		t.Errorf("securityContext %+v added for an emptyDir", pod.Spec.SecurityContext)
	}
	validate(t, raw)
}

// TestInjectPostgres: a pod on a shared PostgreSQL store gets the Secret
// of its DSN and the one of the database's certificates as volumes,
// mounted read-only where proxy.yaml's store.postgres.dsnFile and
// store.postgres.tls name them (the chart's paths); without the TLS
// annotation only the DSN is mounted.
func TestInjectPostgres(t *testing.T) {
	h := webhook.New(config(t), webhook.WithNative(true))
	cases := map[string]struct {
		tls  string
		want map[string]string // mount path: the Secret behind it
	}{
		"DSN and TLS": {"billing-postgres-ca", map[string]string{
			"/etc/fencegate/postgres": "billing-postgres", "/etc/fencegate/postgres-tls": "billing-postgres-ca"}},
		"DSN only": {"", map[string]string{"/etc/fencegate/postgres": "billing-postgres"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			body := review(t, func(_, pod map[string]any) {
				a := annotations(pod)
				a[inject.AnnotationData] = "emptyDir"
				a[inject.AnnotationPostgresSecret] = "billing-postgres"
				if c.tls != "" {
					a[inject.AnnotationPostgresTLS] = c.tls
				}
			})
			pod, raw := patched(t, body, answer(t, h, body))
			ct, _, _ := findContainer(pod, inject.ContainerName)
			if ct == nil {
				t.Fatal("no fencegate container")
			}
			vols := map[string]corev1.Volume{}
			for _, v := range pod.Spec.Volumes {
				vols[v.Name] = v
			}
			got := map[string]string{}
			for _, m := range ct.VolumeMounts {
				if !strings.HasPrefix(m.MountPath, "/etc/fencegate/postgres") {
					continue
				}
				if !m.ReadOnly {
					t.Errorf("%s mounted writable", m.MountPath)
				}
				if v := vols[m.Name]; v.Secret != nil {
					got[m.MountPath] = v.Secret.SecretName
				}
			}
			if len(got) != len(c.want) {
				t.Errorf("postgres mounts %v, want %v", got, c.want)
			}
			for path, secret := range c.want {
				if got[path] != secret {
					t.Errorf("%s: Secret %q mounted, want %q", path, got[path], secret)
				}
			}
			validate(t, raw)
		})
	}
}

// TestInjectOnce: a pod that already has the sidecar (the patched pod
// sent again, as a re-invocation does, or a container named fencegate of
// its own) is allowed unchanged.
func TestInjectOnce(t *testing.T) {
	h := webhook.New(config(t), webhook.WithNative(true))
	body := review(t, nil)
	_, raw := patched(t, body, answer(t, h, body))
	again := review(t, func(req, _ map[string]any) {
		var pod map[string]any
		if err := json.Unmarshal(raw, &pod); err != nil {
			t.Fatal(err)
		}
		req["object"] = pod
	})
	unchanged(t, answer(t, h, again), "already injected")

	byName := review(t, func(_, pod map[string]any) {
		spec := pod["spec"].(map[string]any)
		spec["containers"] = append(spec["containers"].([]any), map[string]any{"name": "fencegate", "image": image})
	})
	unchanged(t, answer(t, h, byName), "already injected")
}

// TestNotInjected: no annotation, "false", an update and another kind
// are allowed unchanged.
func TestNotInjected(t *testing.T) {
	h := webhook.New(config(t), webhook.WithNative(true))
	cases := map[string]struct {
		edit func(req, pod map[string]any)
		msg  string
	}{
		"no annotation": {func(_, pod map[string]any) {
			pod["metadata"].(map[string]any)["annotations"] = map[string]any{"team": "billing"}
		}, "not requested"},
		"inject false": {func(_, pod map[string]any) { annotations(pod)[inject.AnnotationInject] = "false" }, "not requested"},
		"update":       {func(req, _ map[string]any) { req["operation"] = "UPDATE" }, "when a pod is created"},
		"not a pod": {func(req, _ map[string]any) {
			req["kind"] = map[string]any{"group": "apps", "version": "v1", "kind": "Deployment"}
		}, "not a pod"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			unchanged(t, answer(t, h, review(t, c.edit)), c.msg)
		})
	}
}

// TestDenied: a pod that asks for the sidecar and cannot have it is
// refused with every reason, each naming its annotation.
func TestDenied(t *testing.T) {
	cases := map[string]struct {
		native bool
		edit   func(req, pod map[string]any)
		want   []string
	}{
		"bad annotations": {true, func(_, pod map[string]any) {
			a := annotations(pod)
			a["fencegate.io/tls-secret"] = "x"
			a[inject.AnnotationData] = "pvc/store"
			a[inject.AnnotationTrust] = "configmap/Not_A_Name"
			delete(a, inject.AnnotationConfig)
		}, []string{
			"fencegate.io/tls-secret is not an annotation of fencegate's injector",
			`fencegate.io/data: "pvc/store" is not one of claim/NAME, volume/NAME, emptyDir`,
			`fencegate.io/trust: "Not_A_Name" is not an object name`,
			"fencegate.io/config is required",
		}},
		"inject yes": {true, func(_, pod map[string]any) { annotations(pod)[inject.AnnotationInject] = "yes" },
			[]string{`fencegate.io/inject: "yes" is not "true" or "false"`}},
		"no tls choice": {true, func(_, pod map[string]any) { delete(annotations(pod), inject.AnnotationTLS) },
			[]string{"fencegate.io/tls is required (secret/NAME, spiffe-csi, none)"}},
		"native on a cluster without": {false, func(_, pod map[string]any) { annotations(pod)[inject.AnnotationNative] = "true" },
			[]string{"fencegate.io/native", "Kubernetes 1.29"}},
		"port taken": {true, func(_, pod map[string]any) {
			c := pod["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
			c["ports"] = []any{map[string]any{"containerPort": 8780}}
		}, []string{"container billing-api declares port 8780"}},
		"volume name taken": {true, func(_, pod map[string]any) {
			spec := pod["spec"].(map[string]any)
			spec["volumes"] = append(spec["volumes"].([]any), map[string]any{"name": "fencegate-config", "emptyDir": map[string]any{}})
		}, []string{"already has a volume named fencegate-config"}},
		"marker without the sidecar": {true, func(_, pod map[string]any) { annotations(pod)[inject.AnnotationInjected] = image },
			[]string{"carries fencegate.io/injected but has no fencegate container"}},
		"missing data volume": {true, func(_, pod map[string]any) { annotations(pod)[inject.AnnotationData] = "volume/fencegate-data" },
			[]string{"fencegate.io/data: the pod has no volume fencegate-data"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			h := webhook.New(config(t), webhook.WithNative(c.native))
			denied(t, answer(t, h, review(t, c.edit)), c.want...)
		})
	}
}

// TestUnknownFieldsSurvive: the patch only adds, so a field of a newer
// Kubernetes than the injector's API types stays in the pod.
func TestUnknownFieldsSurvive(t *testing.T) {
	h := webhook.New(config(t), webhook.WithNative(true))
	body := review(t, func(_, pod map[string]any) {
		pod["spec"].(map[string]any)["futureField"] = map[string]any{"x": 1.0}
	})
	out := answer(t, h, body)
	if !out.Response.Allowed {
		t.Fatalf("denied: %v", out.Response.Result)
	}
	for _, op := range decodeOps(t, out.Response.Patch) {
		if op["op"] != "add" {
			t.Errorf("patch operation %v: the injector only adds", op)
		}
	}
	var in admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &in); err != nil {
		t.Fatal(err)
	}
	p, err := jsonpatch.DecodePatch(out.Response.Patch)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := p.Apply(in.Request.Object.Raw)
	if err != nil {
		t.Fatal(err)
	}
	var pod map[string]any
	if err := json.Unmarshal(raw, &pod); err != nil {
		t.Fatal(err)
	}
	if pod["spec"].(map[string]any)["futureField"] == nil {
		t.Errorf("the patched pod lost spec.futureField")
	}
}

func decodeOps(t *testing.T, patch []byte) []map[string]any {
	t.Helper()
	var ops []map[string]any
	if err := json.Unmarshal(patch, &ops); err != nil {
		t.Fatal(err)
	}
	return ops
}
