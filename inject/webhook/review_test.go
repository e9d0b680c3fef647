package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/fencegate/fencegate/inject"
	"github.com/fencegate/fencegate/inject/webhook"
)

const image = "registry.example.org/fencegate:0.1.0"

func config(t *testing.T) inject.Config {
	t.Helper()
	cfg := inject.Config{Image: image}
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// review loads testdata/pod-create.json (an AdmissionReview as the API
// server sends it for a ReplicaSet's pod) and lets edit change its pod
// (the request's object, as a JSON tree) or the request.
func review(t *testing.T, edit func(req map[string]any, pod map[string]any)) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "pod-create.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	req := doc["request"].(map[string]any)
	if edit != nil {
		edit(req, req["object"].(map[string]any))
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func annotations(pod map[string]any) map[string]any {
	return pod["metadata"].(map[string]any)["annotations"].(map[string]any)
}

// answer posts an AdmissionReview to the handler, wrapped in
// controller-runtime's admission.Webhook, on a real HTTP server, and
// returns the AdmissionReview it answers.
func answer(t *testing.T, h *webhook.Handler, body []byte) admissionv1.AdmissionReview {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle(webhook.Path, h.Webhook())
	srv := httptest.NewServer(mux)
	defer srv.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Post(srv.URL+webhook.Path, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	var out admissionv1.AdmissionReview
	dec := json.NewDecoder(resp.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		t.Fatal(err)
	}
	if out.Response == nil || out.Response.UID != "3a6c2f5e-8a44-4d5c-9d2f-0b5f7d4b1c11" {
		t.Fatalf("response %+v does not answer the request's uid", out.Response)
	}
	return out
}

// patched applies the response's JSON patch to the request's pod and
// decodes the result strictly into a corev1.Pod (an unknown or mistyped
// field fails); it returns the pod and its JSON.
func patched(t *testing.T, body []byte, out admissionv1.AdmissionReview) (corev1.Pod, []byte) {
	t.Helper()
	if !out.Response.Allowed {
		t.Fatalf("denied: %v", out.Response.Result)
	}
	if out.Response.PatchType == nil || *out.Response.PatchType != admissionv1.PatchTypeJSONPatch {
		t.Fatalf("patch type %v, want JSONPatch", out.Response.PatchType)
	}
	var in admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &in); err != nil {
		t.Fatal(err)
	}
	p, err := jsonpatch.DecodePatch(out.Response.Patch)
	if err != nil {
		t.Fatalf("the patch does not decode: %v\n%s", err, out.Response.Patch)
	}
	raw, err := p.Apply(in.Request.Object.Raw)
	if err != nil {
		t.Fatalf("the patch does not apply to the pod: %v\n%s", err, out.Response.Patch)
	}
	var pod corev1.Pod
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&pod); err != nil {
		t.Fatalf("the patched pod does not decode strictly: %v\n%s", err, raw)
	}
	return pod, raw
}

func unchanged(t *testing.T, out admissionv1.AdmissionReview, wantMsg string) {
	t.Helper()
	r := out.Response
	if !r.Allowed || len(r.Patch) != 0 || r.PatchType != nil {
		t.Fatalf("allowed %v, patch %s; want allowed unchanged", r.Allowed, r.Patch)
	}
	if r.Result == nil || !strings.Contains(r.Result.Message, wantMsg) {
		t.Fatalf("result %+v, want a message with %q", r.Result, wantMsg)
	}
}

func denied(t *testing.T, out admissionv1.AdmissionReview, want ...string) {
	t.Helper()
	r := out.Response
	if r.Allowed || len(r.Patch) != 0 {
		t.Fatalf("allowed %v, patch %s; want denied", r.Allowed, r.Patch)
	}
	for _, w := range want {
		if r.Result == nil || !strings.Contains(r.Result.Message, w) {
			t.Errorf("denied with %q, want it to say %q", r.Result.Message, w)
		}
	}
}

// findContainer returns the named container and whether it is an init
// container.
func findContainer(pod corev1.Pod, name string) (*corev1.Container, bool, int) {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i], true, i
		}
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i], false, i
		}
	}
	return nil, false, -1
}

// checkSecurity asserts what the chart's tests assert of every container.
func checkSecurity(t *testing.T, c *corev1.Container) {
	t.Helper()
	sc := c.SecurityContext
	switch {
	case sc == nil:
		t.Fatal("no securityContext")
	case sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot:
		t.Error("runAsNonRoot is not true")
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Error("readOnlyRootFilesystem is not true")
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Error("allowPrivilegeEscalation is not false")
	case sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) > 0:
		t.Errorf("capabilities %+v, want drop ALL only", sc.Capabilities)
	}
}

var (
	validatorOnce sync.Once
	validatorBin  string
	validatorSkip string
	validatorErr  error
)

// validate runs the chart's offline manifest validator (charts/validate,
// what every rendered manifest of the chart passes) on the patched pod.
func validate(t *testing.T, raw []byte) {
	t.Helper()
	validatorOnce.Do(func() {
		dir, err := os.MkdirTemp("", "fencegate-validate-")
		if err != nil {
			validatorErr = err
			return
		}
		validatorBin = filepath.Join(dir, "validate")
		cmd := exec.CommandContext(context.Background(), "go", "build", "-mod=readonly", "-o", validatorBin, ".")
		cmd.Dir = filepath.Join("..", "..", "charts", "validate")
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-buildvcs=false", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			if strings.Contains(string(out), "dial tcp") || strings.Contains(string(out), "GOPROXY=off") {
				validatorSkip = "SKIPPED: the module proxy is unreachable, so charts/validate cannot be built: " + string(out)
				return
			}
			validatorErr = err
			validatorBin = string(out)
		}
	})
	if validatorSkip != "" {
		t.Skip(validatorSkip)
	}
	if validatorErr != nil {
		t.Fatalf("building charts/validate: %v\n%s", validatorErr, validatorBin)
	}
	path := filepath.Join(t.TempDir(), "pod.json")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(validatorBin, path).CombinedOutput()
	if err != nil {
		t.Fatalf("the injected pod does not validate: %v\n%s\n%s", err, out, raw)
	}
}
