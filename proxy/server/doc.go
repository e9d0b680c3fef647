// Package server assembles a runnable sidecar from a proxy.Config: the
// fenced store (bolt by default, memory for tests), the registry client,
// the metrics registry, the proxy.Proxy, its inbound listener (TLS or
// mTLS when configured) and the admin listener serving proxy/adminapi
// (with the admin token). Run owns their lifecycle. cmd/fencegate's proxy
// subcommand is a thin wrapper around it.
//
// # One replica per local store
//
// A local store (bolt; memory when store.service is set) knows only what
// passed through its own sidecar, so it must serve one replica only, and
// New enforces it: it claims store.service at the registry by holding a
// lease on "fencegate-store/<service>" (client.Holder, TTL
// store.claimTTL, owned by the registry client's identity: its mTLS
// certificate, or store.claimIdentity in the identity header of a
// header-mode registry). When another sidecar holds the claim, New waits
// up to one claim TTL (a restarted pod's old claim expires within it) and
// then fails, naming the service; several replicas use store.backend
// redis. While running, the store is wrapped so that Begin refuses
// (STORE_UNAVAILABLE, nothing forwarded) whenever the Holder is not HELD
// or RENEWING, and /readyz fails with it; a claim that ended is claimed
// again every half TTL. Closing the store at the end of Run releases the
// claim, so the next pod of the service starts at once.
package server
