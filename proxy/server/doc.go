// Package server assembles a runnable sidecar from its configuration file.
// Config is the file (config.go): its YAML schema, Load (unknown keys are
// errors), SetDefaults and Validate (config_validate.go: one pure
// validator per section, every problem at once, the pipeline's sections
// checked by proxy.Config.Validate); Pipeline() is the part proxy.New
// takes. From it New opens the fenced store (store.backend: bolt by
// default, redis, postgres (pgconfig.go), memory for tests; store.go), the registry client, the
// metrics registry, the proxy.Proxy, its inbound listener (TLS or mTLS
// when configured), the admin listener serving proxy/adminapi (with the
// admin token) and the health listener (adminapi.NewHealth: probes and
// metrics without credentials). Run owns their lifecycle and every
// background loop. cmd/fencegate's proxy subcommand is a thin wrapper
// around Load, Validate, New and Run.
//
// # One replica per local store
//
// A local store (bolt; memory when store.service is set) knows only what
// passed through its own sidecar, so it must serve one replica only, and
// New enforces it (package store/claim): it claims store.service at the registry by holding a
// lease on "fencegate-store/<service>" (client.Holder, TTL
// store.claimTTL, owned by the registry client's identity: its mTLS
// certificate, or store.identity (by default store.service;
// store.claimIdentity is its earlier name) in the identity header of a
// header-mode registry). When another sidecar holds the claim, New waits
// up to one claim TTL (a restarted pod's old claim expires within it) and
// then fails, naming the service; several replicas use store.backend
// redis or postgres. While running, the store is wrapped (claim.Guard) so that Begin refuses
// (STORE_UNAVAILABLE, nothing forwarded) whenever the Holder is not HELD
// or RENEWING, and fencegate_proxy_store_claim_held is 0; a claim that
// ended is claimed again every half TTL. A lost claim does not make the
// sidecar unready: the claim lives in the registry, and a registry outage
// must not take every pod out of its Service (reads still pass). The
// claim's loop (logging a loss, claiming again) is one of Run's loops,
// not a goroutine of New; Run releases the claim after the store closed,
// so the next pod of the service starts at once.
//
// # The store's outside anchor
//
// When store.service and registry.url are set (always for bolt, redis
// and postgres), New wraps the store in store/anchor before it claims a local
// store's service, then opens the anchor: the store's generation is
// registered at the registry as store.identity (or the client
// certificate), a registry that holds none is seeded, and the registry's
// enforcement ledger is loaded; a registry that cannot be reached fails
// New (the ledger lives there too). A store the registry does not anchor
// (STORE_LOST) opens lost: writes refused, reads pass. Run owns the
// anchor's recheck loop beside the proxy's loops, so a lost store is
// repaired once the loss is acknowledged at the registry. The Redis
// generation file and store/guard checkpoints of earlier versions in
// dataDir are handed to the anchor once and renamed (.upgraded).
//
// # Readiness
//
// /readyz (admin and health listeners) answers ok while the fenced store
// answers and is not lost (the anchor's state and Redis's marker; no
// registry call).
// The configuration was validated and the trust bundle loaded before the
// listeners bound (a failed reload keeps the previous bundle), so a
// running sidecar has both. Nothing in it asks the registry.
package server
