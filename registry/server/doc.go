// Package server assembles a runnable registry from a Config: the backend
// (bbolt by default), the signing key (generated on first start when none
// is configured), the published trust bundle, the identity resolver, the
// HTTP API, TLS or mTLS, logs and metrics. cmd/fencegate's registry
// subcommand is a thin wrapper around it.
package server
