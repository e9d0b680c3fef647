package charts_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fencegate/fencegate/inject"
)

// checkInjector asserts the injector scenarios: the rendered
// injector.yaml loads with the injector's own loader and injects the
// chart's image; the webhook calls the injector's Service on /inject,
// fails closed by default and never sees the injector's own pods; with
// cert-manager its CA is injected from the chart's Certificate.
func checkInjector(t *testing.T, name string, objs []object) {
	t.Helper()
	var cfgs int
	for _, o := range objs {
		text, ok := configMapFile(o, "injector.yaml")
		if !ok {
			continue
		}
		cfgs++
		path := filepath.Join(t.TempDir(), "injector.yaml")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := inject.LoadConfig(path)
		if err != nil {
			t.Errorf("ConfigMap/%s: injector.yaml is refused by the injector: %v\n%s", o.name(), err, text)
		}
		if cfg.Image != "fencegate:0.1.0" {
			t.Errorf("injects image %q, not the chart's", cfg.Image)
		}
	}
	if cfgs != 1 {
		t.Fatalf("%d injector.yaml, want 1", cfgs)
	}
	hooks := find(objs, "MutatingWebhookConfiguration")
	if len(hooks) != 1 {
		t.Fatalf("%d MutatingWebhookConfigurations, want 1", len(hooks))
	}
	hook := list(dig(map[string]any(hooks[0]), "webhooks"))[0]
	if dig(hook, "clientConfig", "service", "path") != "/inject" {
		t.Errorf("webhook path %v, want /inject", dig(hook, "clientConfig", "service", "path"))
	}
	excluded := false
	for _, e := range list(dig(hook, "objectSelector", "matchExpressions")) {
		excluded = excluded || (dig(e, "key") == "app.kubernetes.io/component" && dig(e, "operator") == "NotIn")
	}
	if !excluded {
		t.Error("the webhook's objectSelector does not exclude the injector's own pods (they could not start while it is down)")
	}
	if dig(hook, "namespaceSelector", "matchLabels", "fencegate.io/injection") != "enabled" {
		t.Errorf("namespaceSelector %v, want the opt-in label", dig(hook, "namespaceSelector"))
	}
	caFrom := dig(map[string]any(hooks[0]), "metadata", "annotations", "cert-manager.io/inject-ca-from")
	switch name {
	case "injector":
		if dig(hook, "failurePolicy") != "Fail" {
			t.Errorf("failurePolicy %v, want Fail by default", dig(hook, "failurePolicy"))
		}
		certs := find(objs, "Certificate")
		if len(certs) != 1 || caFrom != namespace+"/"+certs[0].name() {
			t.Errorf("inject-ca-from %v, certificates %d", caFrom, len(certs))
		}
		if dig(map[string]any(find(objs, "Deployment")[0]), "spec", "template", "spec", "automountServiceAccountToken") != true {
			t.Error("native: auto needs the service account token (to read /version)")
		}
	case "injector-no-cert-manager":
		if caFrom != nil || dig(hook, "clientConfig", "caBundle") == nil || len(find(objs, "Certificate")) != 0 {
			t.Errorf("without cert-manager: inject-ca-from %v, caBundle %v", caFrom, dig(hook, "clientConfig", "caBundle"))
		}
		if dig(map[string]any(find(objs, "Deployment")[0]), "spec", "template", "spec", "automountServiceAccountToken") != false {
			t.Error("native: never needs no service account token")
		}
	}
}
