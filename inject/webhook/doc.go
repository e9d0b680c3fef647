// Package webhook is the injector's mutating admission handler: it
// decodes the pod of an AdmissionReview, asks inject.Plan, and answers
// with the patch (allowed), allowed unchanged (a pod that did not ask for
// the sidecar, or has it already), or denied with the reason (a pod that
// asked for it and cannot have it: a bad annotation, a conflict). It is
// registered on controller-runtime's webhook server by
// cmd/fencegate-injector; its tests run it through controller-runtime's
// admission.Webhook on a real HTTP server, with AdmissionReview JSON as
// the API server sends it (no envtest: its kube-apiserver and etcd
// binaries are not available here).
package webhook
