// Command fencegate-injector is fencegate's mutating admission webhook: it
// adds the sidecar to the pods annotated fencegate.io/inject: "true" (see
// package inject for the annotations, inject/webhook for the handler).
// It is its own binary so that client-go and controller-runtime stay out
// of the fencegate binary every sidecar runs; the image carries both.
//
//	fencegate-injector --config /etc/fencegate-injector/injector.yaml \
//	  --cert-dir /etc/fencegate-injector/tls --port 9443 --health-listen :8081
//
// It serves the webhook over TLS from tls.crt and tls.key in --cert-dir
// (controller-runtime's webhook server, whose certificate watcher picks up
// a rotated certificate without a restart), GET /healthz and /readyz on
// --health-listen, and logs JSON lines on stderr. With native: auto it
// asks the API server's version once at start (in-cluster credentials;
// /version is readable by every authenticated caller, so no RBAC rule is
// needed) and exits non-zero when it cannot: a webhook that guessed could
// inject sidecars the cluster does not run.
//
// Exit status: 0 after SIGTERM or SIGINT, 1 when serving failed, 2 for
// bad flags or an invalid config.
package main
