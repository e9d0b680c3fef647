// Package registry is the canonical grant registry: server-side lease state,
// a per-resource strictly increasing fence sequence, signed lockGrant.v1
// grants and lockStatus.v1 status proofs.
//
// The package root holds the domain: records (model.go), the pure decision
// functions every backend decides through, the Backend interface, signing
// (sign.go: the one place a grant and a proof are built and signed), and
// Registry, the service that wraps a Backend with signing, the waiting
// acquire (lock handoff), metrics and logs. Backends live in their own
// packages: registry/memory (tests), registry/bolt (the embedded durable
// default) and registry/redis (shared by registry replicas). The HTTP API is registry/httpapi and goes through Registry
// only; its JSON wire types are the root package's (fencegate.Lease, ...);
// the worker SDK is the top-level package client.
//
// # Lifecycle
//
// New builds a Registry and starts nothing. Its background work runs in
// Run(ctx), as the sidecar's runs in proxy.Run: the subscription to the
// other processes' "a lease ended" notifications on a shared backend
// (Notifier, registry/redis), which wakes this process's waiting
// acquires, and the backend's own loops (Runner: registry/redis saves its
// state file). registry/server's Run runs it beside the listener and
// stops it before closing the backend; tests run it with
// registrytest.Start. Without Run nothing waits without a bound: a
// waiting acquire is woken in its own process by the release or
// revocation there and otherwise by its timers (the holder's expiry, the
// wait's deadline); a shared backend then only loses latency and what
// its loops keep (run.go says which).
//
// # Decisions over snapshots
//
// Every operation is one atomic step of the same shape, like the fenced
// store's (package store): the backend loads a snapshot by keys derived
// from the input, calls a pure function of this package, and writes the
// Change it returns in the same transaction:
//
//   - DecideAcquire over an AcquireSnapshot: the meta, the resource's
//     policy, the (owner, requestId) index entry and its lease, the
//     resource's record and its holder lease;
//   - DecideRenew, DecideRelease and DecideStatus over a LeaseSnapshot: the
//     meta, one lease, its resource's record and policy;
//   - DecideResource over a ResourceSnapshot; DecideBumpEpoch and
//     DecideInit over the meta; DecideFenceFloor over the meta and one
//     record; DecidePutPolicy and DecideDeletePolicy over the meta (and the
//     policy of the pattern); DecideCompact over candidate leases;
//   - the store anchor (below): DecideRegisterStore, DecideLedger,
//     DecideAcknowledge and DecideStore over a StoreSnapshot, DecideAnchor
//     over an AnchorSnapshot (a batch of anchor steps, each AnchorStep),
//     DecideAnchors over an AnchorsSnapshot.
//
// A decision reads nothing else and writes only its Change, so the Redis
// backend (registry/redis) implements it with WATCHed reads of those keys
// and one MULTI/EXEC; an etcd backend would do it in one transaction
// comparing their revisions. A grant is signed between the decision and the write
// (SealGrant), inside the same step; a backend refuses to write an
// unsealed grant. On a StagedTxStore (registry/bolt, whose concurrent
// operations share one group transaction) the signature is the step's
// Work, made in the caller's goroutine while the transaction runs the
// other operations of its group, and the token and digest are written by
// its Finish in the same transaction before the commit (tx_staged.go):
// the lease is never committed unsealed, and a decision of the same group
// that would hand out its token (an idempotent repeat, a release) meets it
// unsealed and runs again after the commit. A refusal (busy, not held, denied, bad input) writes
// nothing, except that a renew or release that finds a lease no longer held
// records its observed end. Times come in the inputs: a decision never
// reads a clock; the registry's clock is its own (injected; by default the
// process's monotonic clock anchored at start), never the client's, and a
// lease decision raises it to the registry's time read in its snapshot
// (Meta.Time, the latest time any process sharing the backend committed a
// lease decision at), by at most the process's skew budget (time.go).
//
// # The fence sequence: never reissued
//
// The property to keep is: for a resource, every fence the registry issues
// is greater than every fence it issued before for that resource. Sidecars
// and the fenced store rely on it: a write under a lower fence is stale, and
// the same fence under two operation roots is proof of a double issue
// (FENCE_REGRESSION).
//
// DecideAcquire allocates the fence in the step that grants the lease:
// fence = max(LastFence, the resource's floor, the global floor) + 1, and
// the record's LastFence is set to it in the same Change as the lease and
// its index entries. It reads the record itself, not a cached counter, so
// two acquires of one resource serialize on that key (the transaction, the
// WATCH, the script) and cannot allocate the same fence. Nothing ever lowers
// LastFence: no decision writes a smaller one, compaction deletes leases
// but never a record, and a resource whose record is missing starts at
// fence 1 (or just above the global floor) only because it never had one.
// At the top of the range the
// acquire fails (ErrFenceExhausted) instead of wrapping.
//
// Floors are how an operator restores that property after a restore from
// an old snapshot (whose LastFence may be below fences already issued):
// DecideFenceFloor raises the global or a resource's floor, taking the max
// with the stored one, so a floor never goes down and the next fence is
// above it. A floor never changes LastFence or a held lease.
//
// # Epochs, policy generations and the holder
//
// A lease's effective state (LeaseState) is computed at each read from the
// stored lease, the meta and the resource's policy: REVOKED when its issuer
// epoch is older than the current one or its policy generation is not the
// resource's current one, EXPIRED once the registry's clock reaches its
// expiry, else its stored state. That is why acquire, renew, release and
// status read the meta and the policy along with the lease: a revocation is
// one write of the meta (DecideBumpEpoch) or of one policy
// (DecidePutPolicy, DecideDeletePolicy, whose tombstone keeps the
// generation growing), never a walk over leases, and it takes effect in
// the next decision that reads them. Epochs and generations only grow.
//
// Acquire is busy while the holder's effective state is HELD, so at most
// one lease of a resource is held at any time. It reads the holder lease
// named by the record, not an index of leases: the record's Holder is the
// last granted lease, and every grant replaces it in the same step. A
// holder found expired or revoked but still stored HELD is closed in the
// grant's Change (its end recorded); a holder lease compacted away reads as
// free. An expired lease is never silently renewed: DecideRenew answers
// NotHeld (EXPIRED, RELEASED or REVOKED), and the caller must acquire again
// and receive a new, higher fence.
//
// Idempotency comes first: the (owner, requestId) index entry names the
// lease an earlier acquire granted, and the same pair always gets that lease
// and grant back, whatever its state now (a lost response is recovered
// without a second fence). The pair reused for another resource or
// operation class is ErrRequestConflict. Compaction deletes the entry with
// its lease; a request ID is then unknown.
//
// # The issuer lineage
//
// Meta.Lineage is a random ID (32 lowercase hex digits) written once, by
// the first write that finds the meta without one: Registry.Init at a
// process's start (DecideInit, with the start fence floor), or the first
// grant (DecideAcquire, from the candidate in AcquireInput) or store write
// of a data set never started with Init. Nothing changes it after, so a
// data set restored from a backup keeps its lineage, and an empty one (a
// new registry, an emptied Redis) gets a new one. Every grant carries the
// meta's lineage as its "lineage" claim (LeaseRecord.Lineage, GrantClaims):
// the sidecars tell by it a registry that continued above a resource's
// highest fence from one that started over. Two first writers racing
// (Redis processes) serialize on the meta, so one lineage wins and every
// grant carries it.
//
// # The store anchor
//
// The registry keeps, for every fenced store (named by the sidecars'
// store.service), what no copy of the store can lose with it
// (docs/design.md section 15): its generation and loss counters
// (StoreRecord), its enforcement ledger, and per resource the anchored
// fencegate.Progress that every copy of the store must cover. A sidecar
// registers its store's generation (the first registration anchors it,
// another is ErrStoreLost until an operator acknowledges the loss) and
// sends batches of anchor steps, which DecideAnchor decides in one
// transaction, item by item, with fencegate.Progress.Covers (AnchorStep):
// a store found behind its anchor is LOSS, and nothing changes. The policy
// matching fencegate.StoreResource(store) says who may call. Anchor writes
// are not writes a grant or a proof states: they never count in
// Meta.Revision and never write the meta (but a data set's first lineage),
// so they do not conflict with lease writes.
//
// # Proofs
//
// A status proof states a view read in one step (LeaseView): the lease's
// effective state, the meta's epoch and revision, and the policy
// generation. Its lifetime is bounded: exp <= iat + MaxProofTTL and, for a
// HELD lease, exp <= the lease's expiry, so a proof never says "held"
// beyond the lease (ProofClaims).
package registry
