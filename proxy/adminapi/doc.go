// Package adminapi serves the sidecar's admin API, on its own listener:
// /healthz, /readyz, /metrics, and under /v1 receipts, resource records,
// the lists of unknown, quarantined and paused resources, the highest
// fences (GET /v1/fences, paged: what `fencegate fences collect` reads to
// find the fence floor a new registry starts from), reconcile, pause,
// resume, and the trust pins: GET /v1/trust (the bundle file's keys and
// the pins), POST /v1/trust/accept (an operator pins a key added to the
// bundle file) and POST /v1/trust/reload. Callers must be on loopback or
// present the admin bearer token.
//
// NewHealth serves the health listener: GET and HEAD of /healthz, /readyz
// and /metrics only, to any caller without credentials (kubelet probes,
// Prometheus); nothing there changes state. /readyz answers ok while the
// store answers and every ReadyCheck passes; none of them asks the
// registry (docs/design.md, listeners).
//
// It talks to the sidecar only through the exported surface of
// *proxy.Proxy (proxy/operator.go, proxy/trust.go; authn/trust_operator.go). The worker-facing
// /.fencegate/v1/receipts stays on the inbound listener, in package proxy.
// Every error is an RFC 9457 application/problem+json document with a
// stable code. docs/sidecar-admin-api.md is its reference (checked
// against the routes by a test). Client is its Go client, as the CLI
// uses it.
package adminapi
