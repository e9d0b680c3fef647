// Package authn is the authentication of a protected write: whether a
// grant is authentic, bound to this caller and resource, and currently
// held. The sidecar's fence core (package proxy) calls it
// (Authenticator.Check) after reading the request's fence headers and
// before anything touches the store; library mode (package pgfence) calls
// it (CheckCaller) with the identity the service established, inside the
// service's own transaction. Both build it from their configuration
// (Config, Deps): authn imports neither, only the contract, verify,
// store, identity and clock.
//
//   - identity: the caller's workload identity (package identity's
//     Resolver) and the grant's binding to it and to the route's resource
//     (authn.go);
//   - the keys verified with (trust.go): the trust bundle file's keys
//     (trust_file.go) that are pinned in the fenced store, by the pure
//     rules of trust_pins.go; first use, signed bundles, removals and the
//     "in use until" of each key; the operator's list and acceptance
//     (trust_operator.go); its metrics (trust_metrics.go);
//   - the verification cache (verifycache.go, verifycache_metrics.go):
//     memoized signature checks, keyed by token bytes and trust
//     generation;
//   - status (status.go): a fresh lockStatus.v1 proof or a linearizable
//     registry read (each read counted by result: CountedStatus,
//     status_metrics.go, which proxy/server wraps its registry client
//     in), with the highest issuer epoch seen, the grants the registry
//     said have ended (ended.go) and the lower bound on the time the
//     registry teaches (learnedtime.go, TimeBound).
//
// A refusal is a *Refusal with the contract's code; proxy answers it.
// Nothing here forwards, and nothing here writes to the store but trust
// pins.
package authn
