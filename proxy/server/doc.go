// Package server assembles a runnable sidecar from a proxy.Config: the
// fenced store (bolt by default, memory for tests), the registry client,
// the metrics registry, the proxy.Proxy, its inbound listener (TLS or
// mTLS when configured) and the admin listener serving proxy/adminapi
// (with the admin token). Run owns their lifecycle. cmd/fencegate's proxy
// subcommand is a thin wrapper around it.
package server
