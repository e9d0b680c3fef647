package charts_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	proxyserver "github.com/fencegate/fencegate/proxy/server"
)

const (
	chartDir   = "fencegate"
	exampleDir = "fencegate/examples/billing-api"
	release    = "fg"
	namespace  = "fencegate"
	adminPort  = 8781
)

// scenarios lists the chart's ci/*-values.yaml files.
func scenarios(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "ci", "*-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no %s/ci/*-values.yaml", dir)
	}
	return files
}

func scenarioName(path string) string {
	return strings.TrimSuffix(filepath.Base(path), "-values.yaml")
}

// TestChartLint runs helm lint --strict on the chart's defaults: the
// schema (values.schema.json) and every template must accept them.
func TestChartLint(t *testing.T) {
	tl := needTools(t)
	t.Logf("tools: %s", tl.buildNote)
	if out, err := runHelm(t, tl, "lint", "--strict", chartDir); err != nil {
		t.Fatal(err)
	} else {
		t.Logf("%s", out)
	}
}

// TestChartScenarios lints and renders every ci/*-values.yaml scenario,
// validates the manifests offline against the Kubernetes and
// prometheus-operator types, loads the rendered proxy.yaml and
// registry.yaml with fencegate's own loaders, and asserts the chart's
// safety properties.
func TestChartScenarios(t *testing.T) {
	tl := needTools(t)
	for _, file := range scenarios(t, chartDir) {
		name := scenarioName(file)
		t.Run(name, func(t *testing.T) {
			if _, err := runHelm(t, tl, "lint", "--strict", chartDir, "-f", file); err != nil {
				t.Fatal(err)
			}
			manifest, err := runHelm(t, tl, "template", release, chartDir, "-n", namespace, "-f", file)
			if err != nil {
				t.Fatal(err)
			}
			validateManifests(t, tl, name, manifest)
			objs := parseManifests(t, manifest)
			checkContainerSecurity(t, objs)
			checkAdminPortNotExposed(t, objs, adminPort)
			proxies, registries := checkConfigs(t, objs)
			if want := len(find(objs, "StatefulSet")); registries != want {
				t.Errorf("%d registry.yaml for %d registry StatefulSets", registries, want)
			}
			checkRegistryFilesMounted(t, objs)
			checkScenario(t, name, objs, proxies, registries)
		})
	}
}

// checkScenario asserts what each scenario is about, so a template that
// silently drops an object fails.
func checkScenario(t *testing.T, name string, objs []object, proxies, registries int) {
	t.Helper()
	count := func(kind string, want int) {
		t.Helper()
		if got := len(find(objs, kind)); got != want {
			t.Errorf("%s: %d %s, want %d", name, got, kind, want)
		}
	}
	switch name {
	case "default":
		count("StatefulSet", 1)
		count("PodDisruptionBudget", 1)
		count("Service", 2)
		sts := find(objs, "StatefulSet")[0]
		if len(list(dig(map[string]any(sts), "spec", "volumeClaimTemplates"))) != 1 {
			t.Errorf("the bolt registry has no volume claim template")
		}
	case "redis-registry", "registry-etcd":
		sts := find(objs, "StatefulSet")[0]
		if dig(map[string]any(sts), "spec", "replicas") != 3 {
			t.Errorf("replicas = %v, want 3", dig(map[string]any(sts), "spec", "replicas"))
		}
		if name == "registry-etcd" {
			checkEtcdConfig(t, objs)
		}
	case "sidecar-shadow", "mtls", "mesh-header":
		count("NetworkPolicy", 1)
		count("PersistentVolumeClaim", 1)
		if proxies != 1 {
			t.Errorf("%d proxy.yaml, want 1", proxies)
		}
	case "sidecar-enforce-redis", "sidecar-postgres":
		count("StatefulSet", 0)
		count("NetworkPolicy", 1)
		count("PersistentVolumeClaim", 0) // a shared store needs no volume
		if proxies != 1 {
			t.Errorf("%d proxy.yaml, want 1", proxies)
		}
		if name == "sidecar-postgres" {
			checkPostgresConfig(t, objs)
		}
	case "injector", "injector-no-cert-manager":
		checkInjector(t, name, objs)
	case "observability":
		count("ServiceMonitor", 1)
		count("PodMonitor", 1)
		count("PrometheusRule", 1)
		dash := 0
		for _, o := range find(objs, "ConfigMap") {
			if dig(map[string]any(o), "metadata", "labels", "grafana_dashboard") == "1" {
				dash++
				text, _ := configMapFile(o, "fencegate.json")
				if !json.Valid([]byte(text)) {
					t.Errorf("the dashboard ConfigMap does not hold valid JSON")
				}
			}
		}
		if dash != 1 {
			t.Errorf("%d dashboard ConfigMaps with grafana_dashboard: \"1\", want 1", dash)
		}
		rule := find(objs, "PrometheusRule")[0]
		groups := list(dig(map[string]any(rule), "spec", "groups"))
		if len(groups) < 2 || dig(groups[len(groups)-1], "name") != "fencegate.local" {
			t.Errorf("the PrometheusRule does not end with the additional group: %d groups", len(groups))
		}
	}
}

// TestChartRefusals renders values the chart must refuse, each with the
// message that tells the operator why.
func TestChartRefusals(t *testing.T) {
	tl := needTools(t)
	sidecar := []string{
		"sidecar.enabled=true", "sidecar.workload.name=api",
		"sidecar.workload.podSelector.app=api", "sidecar.trust.existingSecret=trust",
		"sidecar.tls.existingSecret=tls",
	}
	cases := []struct {
		name string
		set  []string
		want string
	}{
		{"multi-replica workload on bolt", append(sidecar, "sidecar.workload.replicas=3"), "several replicas must share sidecar.store.backend redis"},
		{"admin listener from config", append(sidecar, "sidecar.config.admin.listen=0.0.0.0:8781"), "sidecar.config.admin is set by the chart"},
		{"store from config", append(sidecar, "sidecar.config.store.backend=memory"), "sidecar.config.store is set by the chart"},
		{"sidecar mtls without tls", append(sidecar, "sidecar.tls.enabled=false"), "mtls needs sidecar.tls.enabled"},
		{"sidecar certificate twice", append(sidecar, "sidecar.tls.spiffeCSI=true"), "set existingSecret or spiffeCSI, not both"},
		{"sidecar without trust bundle", append(sidecar, "sidecar.trust.existingSecret="), "sidecar.trust.existingSecret (or existingConfigMap) is required"},
		{"sidecar redis without address", append(sidecar, "sidecar.store.backend=redis"), "sidecar.store.redis.address is required"},
		{"sidecar postgres without DSN Secret", append(sidecar, "sidecar.store.backend=postgres"), "sidecar.store.postgres.existingSecret is required"},
		{"sidecar postgres pool inverted", append(sidecar, "sidecar.store.backend=postgres", "sidecar.store.postgres.existingSecret=pg", "sidecar.store.postgres.maxConns=2", "sidecar.store.postgres.minConns=3"), "sidecar.store.postgres.minConns: 3 is above maxConns 2"},
		{"sidecar postgres client certificate without Secret", append(sidecar, "sidecar.store.backend=postgres", "sidecar.store.postgres.existingSecret=pg", "sidecar.store.postgres.tls.enabled=true", "sidecar.store.postgres.tls.clientCertificate=true"), "tls.clientCertificate needs tls.existingSecret"},
		{"sidecar postgres schema pg_", append(sidecar, "sidecar.store.backend=postgres", "sidecar.store.postgres.existingSecret=pg", "sidecar.store.postgres.schema=pg_catalog"), "/sidecar/store/postgres/schema"},
		{"sidecar postgres DSN inline", append(sidecar, "sidecar.store.backend=postgres", "sidecar.store.postgres.existingSecret=pg", "sidecar.store.postgres.dsn=postgres://u:p@h/db"), "additional properties 'dsn' not allowed"},
		{"registry replicas on bolt", []string{"registry.replicaCount=2"}, "registry.replicaCount > 1 needs a shared backend, registry.redis.enabled or registry.etcd.enabled"},
		{"registry replicas on etcd without shared key", []string{"registry.replicaCount=2", "registry.etcd.enabled=true", "registry.etcd.endpoints={http://etcd:2379}"}, "registry.replicaCount > 1 needs registry.keys.existingSecret"},
		{"registry on redis and etcd", []string{"registry.redis.enabled=true", "registry.redis.address=r:6379", "registry.etcd.enabled=true", "registry.etcd.endpoints={http://etcd:2379}"}, "the registry has one backend, choose one"},
		{"registry etcd without endpoints", []string{"registry.etcd.enabled=true"}, "registry.etcd.endpoints is required"},
		{"registry etcd endpoint without port", []string{"registry.etcd.enabled=true", "registry.etcd.endpoints={http://etcd}"}, "/registry/etcd/endpoints/0"},
		{"registry etcd https without tls", []string{"registry.etcd.enabled=true", "registry.etcd.endpoints={https://etcd:2379}"}, "every endpoint is http://host:port"},
		{"registry etcd http with tls", []string{"registry.etcd.enabled=true", "registry.etcd.endpoints={http://etcd:2379}", "registry.etcd.tls.enabled=true"}, "every endpoint is https://host:port"},
		{"registry etcd user without password Secret", []string{"registry.etcd.enabled=true", "registry.etcd.endpoints={http://etcd:2379}", "registry.etcd.username=fg"}, "registry.etcd.username needs registry.etcd.existingSecret"},
		{"registry etcd password Secret without user", []string{"registry.etcd.enabled=true", "registry.etcd.endpoints={http://etcd:2379}", "registry.etcd.existingSecret=etcd"}, "registry.etcd.existingSecret needs registry.etcd.username"},
		{"registry etcd password inline", []string{"registry.etcd.enabled=true", "registry.etcd.endpoints={http://etcd:2379}", "registry.etcd.password=hunter2"}, "additional properties 'password' not allowed"},
		{"registry etcd client certificate without Secret", []string{"registry.etcd.enabled=true", "registry.etcd.endpoints={https://etcd:2379}", "registry.etcd.tls.enabled=true", "registry.etcd.tls.clientCertificate=true"}, "registry.etcd.tls.clientCertificate needs tls.existingSecret"},
		{"registry etcd prefix with trailing slash", []string{"registry.etcd.enabled=true", "registry.etcd.endpoints={http://etcd:2379}", "registry.etcd.prefix=fg/"}, "/registry/etcd/prefix"},
		{"registry etcd from config", []string{"registry.config.etcd.prefix=x"}, "at '/registry/config': additional properties 'etcd' not allowed"},
		{"registry replicas without shared key", []string{"registry.replicaCount=2", "registry.redis.enabled=true", "registry.redis.address=r:6379"}, "registry.replicaCount > 1 needs registry.keys.existingSecret"},
		{"registry listen from config", []string{"registry.config.listen=0.0.0.0:1"}, "registry.config.listen is set by the chart"},
		{"registry admin token from config", []string{"registry.config.admin.tokenFile=/tmp/token"}, "registry.config.admin.tokenFile is set by the chart"},
		{"sidecar trust bundle from config", append(sidecar, "sidecar.config.trust.bundle=/tmp/jwks.json"), "sidecar.config.trust.bundle is set by the chart"},
		{"registry mtls without tls", []string{"registry.tls.enabled=false"}, "mtls needs registry.tls.enabled"},
		{"writable root file system", []string{"containerSecurityContext.readOnlyRootFilesystem=false"}, "readOnlyRootFilesystem"},
		{"root", []string{"containerSecurityContext.runAsNonRoot=false"}, "runAsNonRoot"},
		{"misspelled key", []string{"registry.replicaCont=2"}, "additional properties 'replicaCont' not allowed"},
		{"unknown store backend", append(sidecar, "sidecar.store.backend=memory"), "value must be one of 'bolt', 'redis', 'postgres'"},
		{"privilege escalation", []string{"containerSecurityContext.allowPrivilegeEscalation=true"}, "allowPrivilegeEscalation"},
		{"injector without cert-manager or a certificate", []string{"injector.enabled=true", "injector.tls.certManager.enabled=false"}, "set injector.tls.existingSecret"},
		{"injector certificate twice", []string{"injector.enabled=true", "injector.tls.existingSecret=x"}, "with injector.tls.certManager.enabled the chart's Certificate writes the Secret"},
		{"injector native misspelt", []string{"injector.enabled=true", "injector.native=yes"}, "value must be one of 'auto', 'always', 'never'"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"template", release, chartDir, "-n", namespace}
			for _, s := range c.set {
				args = append(args, "--set", s)
			}
			out, err := runHelm(t, tl, args...)
			if err == nil {
				t.Fatalf("rendered, want a refusal containing %q", c.want)
			}
			if !strings.Contains(out, c.want) {
				t.Fatalf("refused, but without %q:\n%s", c.want, out)
			}
		})
	}
}

// TestExampleWorkload renders the example parent chart (a Deployment
// that adds the sidecar through the named templates) with each of its
// scenarios, and checks the pod it builds.
func TestExampleWorkload(t *testing.T) {
	tl := needTools(t)
	dir := copyExample(t)
	for _, file := range scenarios(t, dir) {
		name := scenarioName(file)
		t.Run(name, func(t *testing.T) {
			if _, err := runHelm(t, tl, "lint", "--strict", dir, "-f", file); err != nil {
				t.Fatal(err)
			}
			manifest, err := runHelm(t, tl, "template", release, dir, "-n", "billing", "-f", file)
			if err != nil {
				t.Fatal(err)
			}
			validateManifests(t, tl, "example-"+name, manifest)
			objs := parseManifests(t, manifest)
			if n := checkContainerSecurity(t, objs); n != 2 {
				t.Errorf("%d containers checked, want 2 (the service and the sidecar)", n)
			}
			checkAdminPortNotExposed(t, objs, adminPort)
			if proxies, _ := checkConfigs(t, objs); proxies != 1 {
				t.Errorf("%d proxy.yaml, want 1", proxies)
			}
			workloads := append(find(objs, "Deployment"), find(objs, "StatefulSet")...)
			if len(workloads) != 1 {
				t.Fatalf("%d workloads, want 1", len(workloads))
			}
			sidecar := checkSidecarPod(t, name, workloads[0])
			for _, o := range find(objs, "ConfigMap") {
				if text, ok := configMapFile(o, "proxy.yaml"); ok {
					files := strings.Join(checkConfigFilesMounted(t, text, sidecar), " ")
					if name == "postgres" && !strings.Contains(files, "store.postgres.dsnFile store.postgres.tls.caFile") {
						t.Errorf("the postgres scenario's proxy.yaml names the files %s, want its DSN and CA", files)
					}
				}
			}
		})
	}
	t.Run("multi-replica on postgres renders", func(t *testing.T) {
		if out, err := runHelm(t, tl, "template", release, dir, "-n", "billing", "--set", "replicaCount=4",
			"--set", "fencegate.sidecar.store.backend=postgres", "--set", "fencegate.sidecar.store.postgres.existingSecret=pg"); err != nil {
			t.Fatalf("4 replicas on a shared postgres store refused: %v\n%s", err, out)
		}
	})
	t.Run("multi-replica on bolt is refused", func(t *testing.T) {
		out, err := runHelm(t, tl, "template", release, dir, "-n", "billing", "--set", "replicaCount=2")
		if err == nil || !strings.Contains(out, "several replicas must share sidecar.store.backend redis") {
			t.Fatalf("want the render refused for 2 replicas on bolt, got err=%v\n%s", err, out)
		}
	})
}

// checkSidecarPod asserts where the sidecar sits in the example's pod
// and where its data directory lives, and returns the sidecar container.
func checkSidecarPod(t *testing.T, scenario string, workload object) map[string]any {
	t.Helper()
	spec := podSpec(workload)
	var sidecar map[string]any
	inInit := false
	for _, key := range []string{"initContainers", "containers"} {
		for _, c := range list(spec[key]) {
			if dig(c, "name") == "fencegate" {
				sidecar, inInit = c.(map[string]any), key == "initContainers"
			}
		}
	}
	if sidecar == nil {
		t.Fatal("no fencegate container in the pod")
	}
	switch scenario {
	case "bolt":
		if !inInit || sidecar["restartPolicy"] != "Always" {
			t.Errorf("native sidecar: in initContainers %v, restartPolicy %v", inInit, sidecar["restartPolicy"])
		}
		if !hasVolume(spec, "persistentVolumeClaim") {
			t.Errorf("the bolt store is not on a PersistentVolumeClaim")
		}
	case "redis":
		if inInit || sidecar["restartPolicy"] != nil {
			t.Errorf("regular container: in initContainers %v, restartPolicy %v", inInit, sidecar["restartPolicy"])
		}
		if hasVolume(spec, "persistentVolumeClaim") {
			t.Errorf("a shared Redis store needs no PersistentVolumeClaim")
		}
	case "postgres":
		if !inInit || hasVolume(spec, "persistentVolumeClaim") {
			t.Errorf("native %v, a PersistentVolumeClaim %v: want a native sidecar and no claim (a shared store)", inInit, hasVolume(spec, "persistentVolumeClaim"))
		}
		for name, secret := range map[string]string{"fencegate-postgres": "billing-postgres", "fencegate-postgres-tls": "billing-postgres-ca"} {
			found := false
			for _, v := range list(spec["volumes"]) {
				found = found || (dig(v, "name") == name && dig(v, "secret", "secretName") == secret)
			}
			if !found {
				t.Errorf("no volume %s of the Secret %s: %v", name, secret, spec["volumes"])
			}
		}
	case "spiffe-csi":
		found := false
		for _, v := range list(spec["volumes"]) {
			found = found || (dig(v, "name") == "fencegate-tls" && dig(v, "csi", "driver") == "spiffe.csi.cert-manager.io" && dig(v, "secret") == nil)
		}
		if !found {
			t.Errorf("the sidecar's certificate volume is not csi-driver-spiffe's: %v", spec["volumes"])
		}
	case "statefulset-redis":
		if workload.kind() != "StatefulSet" {
			t.Fatalf("a %s, want a StatefulSet", workload.kind())
		}
		claims := list(dig(map[string]any(workload), "spec", "volumeClaimTemplates"))
		if len(claims) != 1 || dig(claims[0], "metadata", "name") != "fencegate-data" {
			t.Errorf("volumeClaimTemplates %v, want the sidecar's fencegate-data", claims)
		}
		for _, v := range list(spec["volumes"]) {
			if dig(v, "name") == "fencegate-data" {
				t.Errorf("the pod has its own fencegate-data volume besides the claim template")
			}
		}
	}
	// The trust bundle is the ConfigMap docs/operations.md creates.
	trust := false
	for _, v := range list(spec["volumes"]) {
		trust = trust || (dig(v, "name") == "fencegate-trust" && dig(v, "configMap", "name") == "fencegate-trust")
	}
	if !trust {
		t.Errorf("the trust volume is not the guide's ConfigMap fencegate-trust: %v", spec["volumes"])
	}
	for _, probe := range []string{"readinessProbe", "livenessProbe"} {
		if dig(sidecar, probe, "httpGet", "port") != "fg-health" {
			t.Errorf("%s not on the health port: %v", probe, dig(sidecar, probe))
		}
	}
	return sidecar
}

func hasVolume(spec map[string]any, source string) bool {
	for _, v := range list(spec["volumes"]) {
		if dig(v, source) != nil {
			return true
		}
	}
	return false
}

// copyExample lays out the example parent chart with the fencegate chart
// as its unpacked dependency (what `helm dependency update` produces),
// without touching the source tree.
func copyExample(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "billing-api")
	copyTree(t, exampleDir, dst, nil)
	copyTree(t, chartDir, filepath.Join(dst, "charts", "fencegate"), func(rel string) bool {
		return rel == "examples"
	})
	return dst
}

func copyTree(t *testing.T, src, dst string, skip func(rel string) bool) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if skip != nil && skip(rel) {
			return filepath.SkipDir
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestValidatorRefuses shows the offline validator failing on what the
// API server would refuse, so a green scenario means something.
func TestValidatorRefuses(t *testing.T) {
	tl := needTools(t)
	cases := []struct{ name, doc, want string }{
		{"unknown field", `
apiVersion: v1
kind: Service
metadata: {name: s}
spec:
  ports: [{port: 80, protocl: TCP}]
`, `unknown field "protocl"`},
		{"wrong type", `
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
data: {a: [1]}
`, "strict decoding"},
		{"long port name", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      containers:
        - {name: c, image: i, ports: [{name: fencegate-health, containerPort: 8782}]}
`, "must be no more than 15 characters"},
		{"probe on a missing port", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      containers:
        - {name: c, image: i, readinessProbe: {httpGet: {path: /readyz, port: health}}}
`, `no port named "health"`},
		{"mount of a missing volume", `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: s}
spec:
  serviceName: s
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      containers:
        - {name: c, image: i, volumeMounts: [{name: nope, mountPath: /x}]}
`, `no volume "nope"`},
		{"selector misses the pods", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: c}}
    spec:
      containers: [{name: c, image: i}]
`, "does not match the pod template's labels"},
		{"rule without a Prometheus duration", `
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata: {name: r}
spec:
  groups:
    - name: g
      rules: [{alert: A, expr: up == 0, for: 5 minutes}]
`, "is not a Prometheus duration"},
		{"unknown ServiceMonitor field", `
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: m}
spec:
  selector: {matchLabels: {a: b}}
  endpoints: [{port: api, intervall: 10s}]
`, `unknown field "intervall"`},
		{"webhook without sideEffects", `
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: w}
webhooks:
  - name: inject.fencegate.io
    admissionReviewVersions: [v1]
    clientConfig: {service: {name: s, namespace: n, path: /inject}}
    rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
`, "sideEffects: None or NoneOnDryRun is required"},
		{"webhook name not qualified", `
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: w}
webhooks:
  - name: inject
    sideEffects: None
    admissionReviewVersions: [v1]
    clientConfig: {url: "http://x.example/inject"}
    rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
`, "at least three segments"},
		{"certificate field misspelt", `
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: c, namespace: n}
spec:
  secretName: c
  dnsName: [a.example]
  issuerRef: {name: i}
`, `unknown field "dnsName"`},
		{"certificate without issuer or names", `
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: c, namespace: n}
spec:
  secretName: c
  usages: [server-auth]
  issuerRef: {kind: Issuer}
`, "spec.issuerRef.name: required"},
		{"issuer of two kinds", `
apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: i}
spec: {selfSigned: {}, ca: {secretName: ca}}
`, "exactly one of selfSigned and ca"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.yaml")
			if err := os.WriteFile(path, []byte(c.doc), 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(tl.validate, path).CombinedOutput()
			if err == nil {
				t.Fatalf("validated, want a refusal containing %q:\n%s", c.want, out)
			}
			if !strings.Contains(string(out), c.want) {
				t.Fatalf("refused, but without %q:\n%s", c.want, out)
			}
		})
	}
}

// checkPostgresConfig asserts the sidecar-postgres scenario's proxy.yaml:
// the DSN is a file of the mounted Secret, never in the ConfigMap, and the
// pool, timeouts and TLS files are the values'.
func checkPostgresConfig(t *testing.T, objs []object) {
	t.Helper()
	for _, o := range find(objs, "ConfigMap") {
		text, ok := configMapFile(o, "proxy.yaml")
		if !ok {
			continue
		}
		if strings.Contains(text, "postgres://") || strings.Contains(text, "password") {
			t.Errorf("proxy.yaml holds a connection string:\n%s", text)
		}
		cfg, err := proxyserver.Load(writeTemp(t, text))
		if err != nil {
			t.Fatal(err)
		}
		pg := cfg.Store.Postgres
		want := proxyserver.PostgresStoreConfig{DSNFile: "/etc/fencegate/postgres/dsn", Schema: "orders", MaxConns: 8, MinConns: 2,
			ConnectTimeout: 3 * time.Second, StatementTimeout: 2 * time.Second}
		want.TLS = pg.TLS
		if pg != want || cfg.Store.Backend != "postgres" {
			t.Errorf("store %s, postgres %+v, want %+v", cfg.Store.Backend, pg, want)
		}
		if tl := pg.TLS; !tl.Enabled || tl.CAFile != "/etc/fencegate/postgres-tls/ca.crt" || tl.CertFile != "/etc/fencegate/postgres-tls/tls.crt" ||
			tl.KeyFile != "/etc/fencegate/postgres-tls/tls.key" || tl.ServerName != "pg.data.svc" {
			t.Errorf("store.postgres.tls %+v", tl)
		}
	}
}

func writeTemp(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "proxy.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
