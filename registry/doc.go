// Package registry is the canonical grant registry: server-side lease state,
// a per-resource strictly increasing fence sequence, signed lockGrant.v1
// grants and lockStatus.v1 status proofs.
//
// The package root holds the domain: records, the Backend interface and the
// pure decision functions (DecideAcquire, DecideRenew, DecideRelease,
// LeaseState) that every backend applies inside one atomic step, so memory,
// bbolt and (later) a Redis Lua script decide identically. Registry wraps a
// Backend with signing, the waiting acquire (lock handoff), metrics and logs.
// Backends live in their own packages: registry/memory (tests) and
// registry/bolt (the embedded durable default). The HTTP API is
// registry/httpapi, its JSON wire types are the root package's
// (fencegate.Lease, ...); the worker SDK is the top-level package client.
//
// Safety rules kept here:
//   - a fence token comes only from the resource's sequence, allocated in the
//     same atomic step that grants the lease, and is always greater than
//     every token issued before for that resource and than the fence floors;
//   - time is the registry's own clock (injected; by default the process's
//     monotonic clock anchored at start), never the client's;
//   - an expired lease is never silently renewed: renew answers EXPIRED;
//   - bumping the issuer epoch revokes every grant of an older epoch; a
//     policy change revokes the grants issued under the previous generation.
package registry
