package charts_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	proxyserver "github.com/fencegate/fencegate/proxy/server"
	"github.com/fencegate/fencegate/registry/server"
)

// object is one rendered Kubernetes document, untyped (the validator
// checks the types; these tests check fencegate's own properties).
type object map[string]any

func (o object) kind() string { s, _ := o["kind"].(string); return s }

func (o object) name() string {
	m, _ := o["metadata"].(map[string]any)
	s, _ := m["name"].(string)
	return s
}

// parseManifests splits a helm template output into its documents.
func parseManifests(t *testing.T, manifest string) []object {
	t.Helper()
	dec := yaml.NewDecoder(strings.NewReader(manifest))
	var objs []object
	for {
		// A plain map: decoding into the named type would make every
		// nested mapping an object too, and dig looks for map[string]any.
		var o map[string]any
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("rendered YAML does not parse: %v", err)
		}
		if o != nil {
			objs = append(objs, object(o))
		}
	}
}

// dig walks nested maps by key.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func list(v any) []any { l, _ := v.([]any); return l }

// podSpec returns the pod spec of a workload object, or nil.
func podSpec(o object) map[string]any {
	switch o.kind() {
	case "Deployment", "StatefulSet", "DaemonSet", "Job":
		m, _ := dig(map[string]any(o), "spec", "template", "spec").(map[string]any)
		return m
	case "Pod":
		m, _ := o["spec"].(map[string]any)
		return m
	}
	return nil
}

// containers returns every container of a pod spec, init containers
// (native sidecars) included.
func containers(spec map[string]any) []map[string]any {
	var out []map[string]any
	for _, key := range []string{"initContainers", "containers"} {
		for _, c := range list(spec[key]) {
			if m, ok := c.(map[string]any); ok {
				out = append(out, m)
			}
		}
	}
	return out
}

// checkContainerSecurity asserts that every container of every workload
// runs as non-root, on a read-only root file system, without privilege
// escalation and with every capability dropped. It returns the number of
// containers checked.
func checkContainerSecurity(t *testing.T, objs []object) int {
	t.Helper()
	n := 0
	for _, o := range objs {
		spec := podSpec(o)
		if spec == nil {
			continue
		}
		for _, c := range containers(spec) {
			n++
			where := fmt.Sprintf("%s/%s container %v", o.kind(), o.name(), c["name"])
			sc, _ := c["securityContext"].(map[string]any)
			if sc == nil {
				t.Errorf("%s: no securityContext", where)
				continue
			}
			if sc["runAsNonRoot"] != true {
				t.Errorf("%s: runAsNonRoot is %v, want true", where, sc["runAsNonRoot"])
			}
			if uid, ok := sc["runAsUser"].(int); ok && uid == 0 {
				t.Errorf("%s: runAsUser 0", where)
			}
			if sc["readOnlyRootFilesystem"] != true {
				t.Errorf("%s: readOnlyRootFilesystem is %v, want true", where, sc["readOnlyRootFilesystem"])
			}
			if sc["allowPrivilegeEscalation"] != false {
				t.Errorf("%s: allowPrivilegeEscalation is %v, want false", where, sc["allowPrivilegeEscalation"])
			}
			if sc["privileged"] == true {
				t.Errorf("%s: privileged", where)
			}
			if !slices.Contains(list(dig(sc, "capabilities", "drop")), any("ALL")) {
				t.Errorf("%s: capabilities.drop %v does not contain ALL", where, dig(sc, "capabilities", "drop"))
			}
			if add := list(dig(sc, "capabilities", "add")); len(add) > 0 {
				t.Errorf("%s: capabilities.add %v", where, add)
			}
		}
	}
	return n
}

// configMapFile returns a ConfigMap's data key, if the object is that
// ConfigMap and has it.
func configMapFile(o object, key string) (string, bool) {
	if o.kind() != "ConfigMap" {
		return "", false
	}
	s, ok := dig(map[string]any(o), "data", key).(string)
	return s, ok
}

// loopback reports whether a listen address binds only a loopback address.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkConfigs loads every rendered proxy.yaml and registry.yaml with
// fencegate's own loaders (unknown keys are errors there too) and
// validates them, and asserts that the sidecar's admin listener is on
// loopback while its inbound and health listeners are reachable. It
// returns how many of each it checked.
func checkConfigs(t *testing.T, objs []object) (proxies, registries int) {
	t.Helper()
	dir := t.TempDir()
	for _, o := range objs {
		if text, ok := configMapFile(o, "proxy.yaml"); ok {
			proxies++
			path := filepath.Join(dir, o.name()+"-proxy.yaml")
			if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := proxyserver.Load(path)
			if err != nil {
				t.Errorf("ConfigMap/%s: proxy.yaml does not load: %v\n%s", o.name(), err, text)
				continue
			}
			if err := cfg.Validate(); err != nil {
				t.Errorf("ConfigMap/%s: proxy.yaml is refused by the sidecar: %v\n%s", o.name(), err, text)
			}
			if !loopback(cfg.Admin.Listen) {
				t.Errorf("ConfigMap/%s: admin.listen %q is not a loopback address", o.name(), cfg.Admin.Listen)
			}
			if loopback(cfg.Listen) || loopback(cfg.Health.Listen) {
				t.Errorf("ConfigMap/%s: listen %q / health.listen %q must be reachable from the pod's IP", o.name(), cfg.Listen, cfg.Health.Listen)
			}
		}
		if text, ok := configMapFile(o, "registry.yaml"); ok {
			registries++
			path := filepath.Join(dir, o.name()+"-registry.yaml")
			if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := server.Load(path)
			if err != nil {
				t.Errorf("ConfigMap/%s: registry.yaml does not load: %v\n%s", o.name(), err, text)
				continue
			}
			if err := cfg.Validate(); err != nil {
				t.Errorf("ConfigMap/%s: registry.yaml is refused by the registry: %v\n%s", o.name(), err, text)
			}
		}
	}
	return proxies, registries
}

// checkAdminPortNotExposed asserts that no container declares, and no
// Service or NetworkPolicy opens, the sidecar's admin port.
func checkAdminPortNotExposed(t *testing.T, objs []object, adminPort int) {
	t.Helper()
	for _, o := range objs {
		if spec := podSpec(o); spec != nil {
			for _, c := range containers(spec) {
				for _, p := range list(c["ports"]) {
					if dig(p, "containerPort") == adminPort {
						t.Errorf("%s/%s: container %v declares the admin port %d", o.kind(), o.name(), c["name"], adminPort)
					}
				}
			}
		}
		var b bytes.Buffer
		if o.kind() == "Service" || o.kind() == "NetworkPolicy" {
			enc := yaml.NewEncoder(&b)
			if err := enc.Encode(map[string]any(o)); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(b.String(), fmt.Sprintf("port: %d\n", adminPort)) {
				t.Errorf("%s/%s opens the admin port %d", o.kind(), o.name(), adminPort)
			}
		}
	}
}

// find returns the objects of a kind.
func find(objs []object, kind string) []object {
	var out []object
	for _, o := range objs {
		if o.kind() == kind {
			out = append(out, o)
		}
	}
	return out
}
