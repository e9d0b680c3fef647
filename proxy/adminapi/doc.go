// Package adminapi serves the sidecar's admin API, on its own listener:
// /healthz, /readyz, /metrics, and under /v1 receipts, resource records,
// the lists of unknown, quarantined and paused resources, reconcile,
// pause, resume and trust reload. Callers must be on loopback or present
// the admin bearer token.
//
// It talks to the sidecar only through the exported surface of
// *proxy.Proxy (proxy/operator.go). The worker-facing
// /.fencegate/v1/receipts stays on the inbound listener, in package proxy.
// Every error is an RFC 9457 application/problem+json document with a
// stable code.
package adminapi
