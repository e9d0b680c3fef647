// Package httpapi serves the registry's HTTP API with chi under /v1:
// acquire (optionally waiting), lookup by request ID, renew, release,
// status proofs by lease or grant digest, resource reads, the outside
// anchor of fenced stores (/v1/stores/{store}: registration, anchor
// batches, ledger, anchor pages, and the admin acknowledgement of a loss;
// stores.go), and the admin operations (issuer epoch bump, fence floors,
// policies, meta); plus /.well-known/jwks.json, /healthz, /readyz and
// /metrics.
//
// Bodies are JSON (unknown fields rejected, 64 KiB at most, anchor batches
// fencegate.MaxAnchorBodyBytes). Every error is
// an RFC 9457 application/problem+json document with a stable "code"; no
// error changes state. The owner of a lease is always the caller's
// established identity (see identity), never a body field.
// docs/registry-api.md documents every route.
package httpapi
