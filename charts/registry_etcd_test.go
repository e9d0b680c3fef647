package charts_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/registry/server"
)

// registryContainer returns the registry StatefulSet's container named
// registry, or nil.
func registryContainer(objs []object) map[string]any {
	for _, sts := range find(objs, "StatefulSet") {
		for _, c := range containers(podSpec(sts)) {
			if c["name"] == "registry" {
				return c
			}
		}
	}
	return nil
}

// checkRegistryFilesMounted asserts that every file the rendered
// registry.yaml names (tls, admin token, Redis or etcd password, etcd's
// TLS files) lies under one of the registry container's volume mounts,
// and returns the keys it checked.
func checkRegistryFilesMounted(t *testing.T, objs []object) []string {
	t.Helper()
	c := registryContainer(objs)
	if c == nil {
		return nil
	}
	var checked []string
	for _, o := range find(objs, "ConfigMap") {
		text, ok := configMapFile(o, "registry.yaml")
		if !ok {
			continue
		}
		keys, missing := unmounted(t, text, c)
		for _, m := range missing {
			t.Errorf("registry.yaml's %s: under none of the registry's mounts %v", m, c["volumeMounts"])
		}
		checked = append(checked, keys...)
	}
	return checked
}

// checkEtcdConfig asserts the registry-etcd scenario's registry.yaml:
// backend etcd with the values' endpoints, prefix, dial timeout and step bounds, the
// password a file of the mounted Secret (never in the ConfigMap), the CA
// and client certificate files of the TLS Secret, and every file mounted.
func checkEtcdConfig(t *testing.T, objs []object) {
	t.Helper()
	found := 0
	for _, o := range find(objs, "ConfigMap") {
		text, ok := configMapFile(o, "registry.yaml")
		if !ok {
			continue
		}
		found++
		if strings.Contains(text, "password:") {
			t.Errorf("registry.yaml holds a password:\n%s", text)
		}
		cfg, err := server.Load(writeTemp(t, text))
		if err != nil {
			t.Fatal(err)
		}
		e := cfg.Etcd
		wantEndpoints := "https://etcd-0.etcd.data.svc:2379 https://etcd-1.etcd.data.svc:2379 https://etcd-2.etcd.data.svc:2379"
		if cfg.Backend != "etcd" || strings.Join(e.Endpoints, " ") != wantEndpoints || e.Prefix != "fgreg-prod" ||
			e.DialTimeout != 3*time.Second || e.RetryFor != 6*time.Second || e.AttemptTimeout != 2*time.Second || e.Username != "fencegate" || e.PasswordFile != "/etc/fencegate/etcd/etcd-password" {
			t.Errorf("backend %s, etcd %+v", cfg.Backend, e)
		}
		if tl := e.TLS; !tl.Enabled || tl.CAFile != "/etc/fencegate/etcd-tls/ca.crt" || tl.CertFile != "/etc/fencegate/etcd-tls/tls.crt" ||
			tl.KeyFile != "/etc/fencegate/etcd-tls/tls.key" || tl.ServerName != "etcd.data.svc" {
			t.Errorf("etcd.tls %+v", tl)
		}
	}
	if found != 1 {
		t.Fatalf("%d registry.yaml, want 1", found)
	}
	checked := strings.Join(checkRegistryFilesMounted(t, objs), " ")
	for _, k := range []string{"etcd.passwordFile", "etcd.tls.caFile", "etcd.tls.certFile", "etcd.tls.keyFile"} {
		if !strings.Contains(checked, k) {
			t.Errorf("registry.yaml's %s not checked against the mounts (checked: %s)", k, checked)
		}
	}
	secrets := map[string]string{}
	for _, sts := range find(objs, "StatefulSet") {
		for _, v := range list(podSpec(sts)["volumes"]) {
			if name, ok := dig(v, "secret", "secretName").(string); ok {
				secrets[dig(v, "name").(string)] = name
			}
		}
	}
	if secrets["etcd"] != "fencegate-etcd" || secrets["etcd-tls"] != "fencegate-etcd-tls" {
		t.Errorf("the registry's Secret volumes %v, want etcd: fencegate-etcd and etcd-tls: fencegate-etcd-tls", secrets)
	}
}

// TestRegistryEtcdRenders renders the registry on etcd without a
// password or TLS (plain http endpoints, one replica) and with TLS from
// system roots (no Secret): the files it names are only those mounted.
func TestRegistryEtcdRenders(t *testing.T) {
	tl := needTools(t)
	cases := []struct {
		name string
		set  []string
		want server.EtcdConfig
	}{
		{"plain", []string{"registry.etcd.enabled=true", "registry.etcd.endpoints={http://etcd.data.svc:2379}"},
			server.EtcdConfig{Endpoints: []string{"http://etcd.data.svc:2379"}, Prefix: "fgreg", DialTimeout: 5 * time.Second}},
		{"tls from system roots", []string{"registry.etcd.enabled=true", "registry.etcd.endpoints={https://etcd.data.svc:2379}", "registry.etcd.tls.enabled=true"},
			server.EtcdConfig{Endpoints: []string{"https://etcd.data.svc:2379"}, Prefix: "fgreg", DialTimeout: 5 * time.Second}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"template", release, chartDir, "-n", namespace}
			for _, s := range c.set {
				args = append(args, "--set", s)
			}
			manifest, err := runHelm(t, tl, args...)
			if err != nil {
				t.Fatalf("%v\n%s", err, manifest)
			}
			objs := parseManifests(t, manifest)
			checkConfigs(t, objs)
			checkRegistryFilesMounted(t, objs)
			for _, o := range find(objs, "ConfigMap") {
				text, ok := configMapFile(o, "registry.yaml")
				if !ok {
					continue
				}
				cfg, err := server.Load(writeTemp(t, text))
				if err != nil {
					t.Fatal(err)
				}
				got := cfg.Etcd
				c.want.TLS.Enabled = strings.HasPrefix(c.want.Endpoints[0], "https")
				if cfg.Backend != "etcd" || strings.Join(got.Endpoints, " ") != strings.Join(c.want.Endpoints, " ") ||
					got.Prefix != c.want.Prefix || got.DialTimeout != c.want.DialTimeout || got.Username != "" ||
					got.PasswordFile != "" || got.TLS != c.want.TLS {
					t.Errorf("backend %s, etcd %+v, want %+v", cfg.Backend, got, c.want)
				}
			}
			for _, sts := range find(objs, "StatefulSet") {
				for _, v := range list(podSpec(sts)["volumes"]) {
					if n := dig(v, "name"); n == "etcd" || n == "etcd-tls" {
						t.Errorf("a volume %v without its Secret", n)
					}
				}
			}
		})
	}
}
