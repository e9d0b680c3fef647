// Package proxy is the fencegate sidecar: the only acceptance point for
// protected writes to a legacy HTTP service.
//
// Every mutating request that matches a protected route goes through
// applyFencedMutation (ServeHTTP), whose request path reads in one
// direction, a file a step: serve.go (decide: read path, route) →
// admit.go → fence.go → forward.go, which return one outcome per request,
// and outcome.go (render), the one place that answers it, counts it and
// tells enforce from shadow mode. Beneath it, and never importing it:
// proxy/inbound reads the request (read path, lenient path readings,
// fence headers, Content-Digest), authn authenticates it (identity,
// trust pins, verification cache, status, ended grants) and
// proxy/outbound talks to the backend (outbound request, forwarding
// headers, the sidecar's header namespace, send-once transport,
// pass-through); proxy builds each from its Config.
//
// The route gives the canonical resource ID; the caller's workload
// identity is established (mTLS SPIFFE ID or a
// trusted mesh header); the lockGrant.v1 in Fence-Grant is verified against
// the trust bundle's pinned keys and bound to that identity and resource; the grant
// is shown to be currently held, by a fresh lockStatus.v1 proof in
// Fence-Status or by a linearizable registry read (unreachable registry:
// 503 REGISTRY_UNAVAILABLE, never forward). None of these steps touches the
// store. Then the fenced store decides (store.Store.Begin) on fence and
// segment order, with the grant's issuer epoch, backend revision and issuer
// lineage as its evidence (a lower fence of a lineage the record never saw
// superseded is a registry that started over: FENCE_REGRESSION and a
// pause), and marks the mutation in flight, with its quiet time (the
// forward's deadline, taken before Begin, plus backend.maxApplyDelay: no
// attempt can take effect after it); the request is forwarded, never after
// that deadline,
// with Fence-Token, Fence-Resource, Fence-Operation-Root, Fence-Segment,
// Fence-Operation-Id (and Idempotency-Key where the route says the backend
// honours it), sent once (no transport-level resend, outbound/sendonce.go),
// and with no client field of the sidecar's Fence-* namespace in any
// spelling (outbound/namespace.go); the answer is committed as a receipt in the same store
// transaction that clears the in-flight marker, and returned with
// Fence-Receipt. A replay of an accepted segment returns the stored answer
// with Fence-Replayed: true, or REPLAY_INCOMPLETE when the answer was not
// kept whole (the write was accepted). A backend that may have received the request
// but did not answer makes the mutation MUTATION_UNKNOWN; the resource then
// blocks new fences until it is reconciled (effect-query endpoint, an
// idempotent retry, or an operator). "Not applied" is settled only on
// evidence no later apply can overtake: gathered after the quiet time, or
// an effect query declared to close the operation (effectQueryCloses);
// before, the reconciler's 404 leaves the mutation unknown and an
// operator's not-applied is refused (MAY_STILL_APPLY).
//
// Routes roll out off → shadow (verify and record, never reject, count what
// would be rejected) → enforce. The enforcement ledger in the fenced store
// refuses to move an enforced route back unless an operator forces it
// (ledger.go; fencegate_proxy_forced_downgrade shows it). A route below
// enforce may not overlap an enforced one (Config.Validate, proxy/overlap),
// and at run time the strictest matching route decides (route.go). A
// mutation about to pass without enforcement whose path a lenient backend
// reads as an enforced route's (a trailing slash, dot segments, case,
// percent-encoding ...) is refused (lenient.go, inbound/lenientpath.go).
//
// The keys verified with are the trust bundle file's keys that are pinned
// in the fenced store (authn, trust.go): the store pins the file on first use
// (when Options.FirstUseAllowed allows it); a key added later is pinned by
// an operator (AcceptTrust) or by a signed bundle (a fencegate.BundleSchema
// JWS signed by a pinned key, newer than the last one the store took); a
// key whose grants may still be held is never dropped by a reload unless
// forced, and that time is stored with its pin (restarts keep it).
//
// Rejections are RFC 9457 problem documents with the stable codes of the
// root package (fencegate.Code); rejection.go holds the rejection value.
//
// This package is the pipeline and its background loops (Run): it takes
// its store, status source, transport, clock, logger and metrics registry
// as built dependencies (Options), and only its own settings (Config:
// routes, backend, unmatched mutations, identity, trust, the status
// timeout, reconcile, retention, upgrades, forwarded headers, the
// pass-through write timeout), which New validates (Config.Validate: one
// pure validator per section, every problem at once; it changes nothing,
// and a route's extension method is registered with chi when New builds
// the router). The admin API lives in proxy/adminapi (it uses the operator
// surface in operator.go and authn). The sidecar's configuration file
// (proxy/server.Config: its YAML schema, loading, defaults and validation,
// whose Pipeline() New receives), the store choice, the registry client,
// listeners, TLS, the admin token and the lifecycle live in proxy/server.
package proxy
