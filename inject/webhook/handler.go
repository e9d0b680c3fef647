package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/fencegate/fencegate/inject"
)

// Path is where the chart's MutatingWebhookConfiguration calls the handler.
const Path = "/inject"

// Handler injects fencegate's sidecar into the pods that ask for it.
type Handler struct {
	cfg    inject.Config
	native bool
}

// Option configures a Handler.
type Option func(*Handler)

// WithNative sets whether the cluster runs native sidecars (the
// injector's Config.Native resolved at start). Default: false, regular
// containers.
func WithNative(native bool) Option { return func(h *Handler) { h.native = native } }

// New returns the handler for a validated config.
func New(cfg inject.Config, opts ...Option) *Handler {
	h := &Handler{cfg: cfg}
	for _, o := range opts {
		o(h)
	}
	return h
}

// Webhook wraps the handler in controller-runtime's admission.Webhook
// (the AdmissionReview decoding and encoding), ready to Register on a
// webhook.Server.
func (h *Handler) Webhook() *admission.Webhook { return &admission.Webhook{Handler: h} }

// Handle answers one admission request.
func (h *Handler) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.Kind.Group != "" || req.Kind.Kind != "Pod" || req.SubResource != "" {
		return admission.Allowed("not a pod")
	}
	if req.Operation != admissionv1.Create {
		return admission.Allowed("the sidecar is added when a pod is created")
	}
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("webhook: the request's object is not a pod: %w", err))
	}
	outcome, ops, err := inject.Plan(&pod, h.cfg, h.native)
	if err != nil {
		// Every reason on one line: kubectl prints the message after
		// "admission webhook ... denied the request:".
		return admission.Denied("fencegate injector: " + strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	if outcome != inject.Injected {
		return admission.Allowed(outcome.String())
	}
	patches := make([]jsonpatch.JsonPatchOperation, len(ops))
	for i, op := range ops {
		patches[i] = jsonpatch.JsonPatchOperation{Operation: op.Op, Path: op.Path, Value: op.Value}
	}
	return admission.Patched("fencegate sidecar injected", patches...)
}
