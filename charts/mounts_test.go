package charts_test

import (
	"path"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// configFiles returns the files a rendered proxy.yaml names: every
// absolute path under a key ending in "File" (dsnFile, passwordFile,
// caFile, ...) or named bundle, keyed by the key's dotted path.
func configFiles(t *testing.T, text string) map[string]string {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatalf("proxy.yaml does not parse: %v", err)
	}
	files := map[string]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				walk(strings.TrimPrefix(prefix+"."+k, "."), x)
			}
		case []any:
			for _, x := range v {
				walk(prefix+"[]", x)
			}
		case string:
			key := prefix[strings.LastIndex(prefix, ".")+1:]
			if (strings.HasSuffix(key, "File") || key == "bundle") && path.IsAbs(v) {
				files[prefix] = v
			}
		}
	}
	walk("", doc)
	return files
}

// unmounted returns the keys of the files proxyYAML names, sorted, and
// those of them under none of the sidecar container's volume mounts.
func unmounted(t *testing.T, proxyYAML string, sidecar map[string]any) (checked, missing []string) {
	t.Helper()
	var mounts []string
	for _, m := range list(sidecar["volumeMounts"]) {
		if p, ok := dig(m, "mountPath").(string); ok {
			mounts = append(mounts, strings.TrimSuffix(p, "/")+"/")
		}
	}
	files := configFiles(t, proxyYAML)
	for k := range files {
		checked = append(checked, k)
	}
	sort.Strings(checked)
	for _, k := range checked {
		mounted := false
		for _, m := range mounts {
			mounted = mounted || strings.HasPrefix(files[k], m)
		}
		if !mounted {
			missing = append(missing, k+" "+files[k])
		}
	}
	return checked, missing
}

// checkConfigFilesMounted asserts that every file the sidecar's proxy.yaml
// names lies under one of the sidecar container's volume mounts (the
// validator checks that each mount has its volume), so a Secret the
// configuration reads but the pod does not mount fails. It returns the
// keys it checked.
func checkConfigFilesMounted(t *testing.T, proxyYAML string, sidecar map[string]any) []string {
	t.Helper()
	checked, missing := unmounted(t, proxyYAML, sidecar)
	for _, m := range missing {
		t.Errorf("proxy.yaml's %s: under none of the sidecar's mounts %v", m, sidecar["volumeMounts"])
	}
	return checked
}

// TestConfigFilesMountedRefuses shows the check failing on a file no
// mount holds, and passing once it is mounted.
func TestConfigFilesMountedRefuses(t *testing.T) {
	const proxyYAML = "store:\n  postgres:\n    dsnFile: /etc/fencegate/postgres/dsn\n    tls:\n      caFile: /etc/fencegate/postgres-tls/ca.crt\n"
	sidecar := map[string]any{"volumeMounts": []any{map[string]any{"name": "fencegate-postgres", "mountPath": "/etc/fencegate/postgres"}}}
	checked, missing := unmounted(t, proxyYAML, sidecar)
	if want := "store.postgres.dsnFile store.postgres.tls.caFile"; strings.Join(checked, " ") != want {
		t.Fatalf("checked %v, want %s", checked, want)
	}
	if len(missing) != 1 || missing[0] != "store.postgres.tls.caFile /etc/fencegate/postgres-tls/ca.crt" {
		t.Fatalf("missing %v, want the caFile", missing)
	}
	sidecar["volumeMounts"] = append(list(sidecar["volumeMounts"]), map[string]any{"name": "fencegate-postgres-tls", "mountPath": "/etc/fencegate/postgres-tls"})
	if _, missing := unmounted(t, proxyYAML, sidecar); len(missing) != 0 {
		t.Fatalf("missing %v with both mounted", missing)
	}
}
