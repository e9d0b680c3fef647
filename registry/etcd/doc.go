// Package etcd is a registry backend on etcd (go.etcd.io/etcd/client/v3):
// the same pure decisions as registry/memory, registry/bolt and
// registry/redis, each applied as one etcd transaction, so several
// registry processes (replicas) can serve one registry at once with no
// leader of their own, on a fence sequence that Raft keeps through the
// loss of a minority of etcd members.
//
// # Design: a registry.TxStore over compare-and-put transactions
//
// Store implements registry.TxStore and OpenBackend wraps it with
// registry.NewTxBackend, like bolt and redis, reusing the snapshot loaders
// and decisions of package registry unchanged. One step (an Update or a
// View) is:
//
//   - reads at one etcd revision: the step's first read is linearizable
//     and fixes the revision; every later read is a linearizable read at
//     that revision. Each key read is remembered with its mod revision
//     (an absent key: 0). Several keys are read in one round trip where
//     the registry reads them together (a batch's anchors), at most 128
//     per round trip (etcd's default --max-txn-ops);
//   - writes are buffered (a later read in the same step sees them);
//   - one etcd transaction: If the mod revision of every key read is still
//     what was read, Then put (or delete) the writes. A failed comparison
//     writes nothing, and the whole step (reads, decision, seal) runs again
//     on fresh reads, at most Options.MaxAttempts times, with a short
//     jittered backoff; after the last conflict it fails with
//     registry.ErrBackend and ErrContention: an error, never a decision
//     over a stale snapshot;
//   - a View is the same transaction with nothing to write: it commits only
//     if none of the keys read changed, so what it returns (a status proof
//     above all) was the registry's state at a moment between its first
//     read and its commit: linearizable, not a serializable (possibly
//     stale, member-local) snapshot. A proof that the lease is held must
//     not state a holder that has already been replaced, so the extra
//     round trip is paid;
//   - keys written without being read are not compared: they are the
//     registry's blind writes (a new lease, its digest index entry, the
//     wake-up keys), whose meaning does not depend on their old value.
//
// This is what clientv3/concurrency's STM does, and the package first
// used it; it is not used because the STM's reads after the first are
// serializable ones served by whichever member the client's balancer
// picks, which may not have applied the first read's revision yet (on a
// three-member cluster the conformance suite failed with "required
// revision is a future revision"); because it retries a conflicting
// transaction without bound and on reads prefetched before the retry
// (which would defeat the watermark snapshot below); and because its
// multi-key Get stops at the first key it already holds. kv.go is the
// hundred lines it takes instead.
//
// Inside one process, steps are serialized (writes exclusively, views
// shared: the Shell of registry/internal/txstore, which registry/redis
// uses too, as it does txstore's Records, the meta, resource and lease
// reads and writes of tx.go over kv.go): every write reads and writes the
// meta key, so concurrent writes would only conflict with each other.
// Conflicts then come from other processes sharing the keyspace. Several
// replicas add availability, not write throughput: the meta key
// serializes every write, as on bolt and redis.
//
// The anchor steps of fenced stores (tx_anchor.go) read the lineage
// outside the transaction (the lineage never changes once set) and write
// no meta, so they never conflict with lease writes, nor lease writes
// with them. Listings (ListLeases, AnchorsAfter, AnchorCount) are range
// reads outside the transaction.
//
// # Transaction size: etcd's --max-txn-ops
//
// A full anchor batch (fencegate.MaxAnchorBatch, 512 items) reads and
// writes about 512 keys in one transaction: its commit has that many
// comparisons and as many puts. etcd refuses a transaction whose
// comparisons, or operations, number more than --max-txn-ops (default
// 128), so the registry needs etcd started with --max-txn-ops 1024 (a
// full batch passes at 600 and fails at 500; package etcdtest runs that).
// Below that, a large anchor batch fails with registry.ErrBackend and
// ErrTxnTooLarge, writing nothing (TestTooManyOpsFailsClosed); lease
// decisions (a handful of keys) are not affected.
//
// Compaction is sized for it too: its walk over the leases (EachLease)
// is range reads at the step's revision that are not compared at commit,
// only the leases it deletes are (a lease changed since it was read is not
// deleted), and the backend splits the registry's batch of
// registry.CompactBatch deletions into transactions of 256 (three deletes
// each: the lease and its index entries), TestCompactManyLeases.
//
// # Keys
//
// Every key starts with "<prefix>/" (Options.Prefix, default "fgreg"):
// schema, meta, policies (one JSON object, pattern -> policy: a policy
// write conflicts with every decision that matched a policy), and one key
// per record: res/<resource>, lease/<id>, req/<owner>\x00<requestId>,
// dig/<digest>; for fenced stores store/<store>, ledger/<store> and
// anc/<store>:<resource> (one range per store, in resource order); and
// the wake-up keys ended/<resource>. Values are the same JSON as bolt's
// and redis's. An etcd transaction spans any keys, so unlike Redis
// Cluster nothing ties them to one shard.
//
// # Wake-ups across replicas
//
// A waiting acquire is woken in its own process when a lease there ends;
// one released on another replica reaches it through etcd: the
// transaction that ends a lease (a release, a revocation, a renewal that
// records an expiry; not an acquire that closes an expired holder to
// grant the resource itself) also puts ended/<resource>, with the
// writer's random origin as value. The wake-up thus commits exactly when
// the end does and costs no round trip of its own. An epoch bump or
// policy change (registry.Notifier's Notify of "") puts ended/ (every
// resource). Each Store runs one watch of the ended/ prefix per
// Subscribe (Registry.Run subscribes for as long as it runs), confirmed
// before Subscribe returns, requiring a leader (a member cut off from the
// quorum cancels it), and watched again after a cancellation; it wakes
// the head waiter of the resource in its process, skipping its own
// origin. A lost wake-up only costs latency: a woken waiter decides by a
// fresh acquire, and an unwoken one wakes at its timer
// (TestReleaseWakesWaiterOnOtherReplica, TestCommitWritesWakeUp). A watch
// watched again resumes after the last revision it saw (see Faults). The
// wake-up keys stay, one per resource ever ended.
//
// # Restores: etcd's revision and the registry's
//
// registry/redis keeps a watermark of the registry's revision, epoch and
// fences, announced between processes over pub/sub, because a Redis
// failover or restore can silently go back. etcd's revision gives most of
// that for free: it is one linearizable counter that only a restore from
// a snapshot or a wiped cluster can move back, every read of a step
// after the first is at the first's revision, and every commit compares
// mod revisions, so no replica needs to hear what another wrote (its
// next linearizable read sees it). What is left is to meet a restore:
// etcdutl snapshot restore without --bump-revision moves etcd's revision
// back, and with --bump-revision moves it forward while the data (the
// registry's own Meta.Revision and epoch) goes back. So each Store keeps
// the shared watermark of registry/internal/rollback (watermark.go): the
// highest registry revision, issuer epoch, policy generation and fence it
// read or wrote, taken before each step's first read. A meta below it is
// a rollback, and before anything is decided on it the Store recovers
// (recover.go): one etcd transaction, compared on the meta's mod
// revision, bumps the issuer epoch above every epoch it saw (every earlier
// grant reads REVOKED), raises the global fence floor above every fence
// it saw or issued, sets the revision above every revision it saw, and
// puts the wake-up key of every resource; then the step runs again. A
// second rollback in a row fails the step with ErrRolledBack (and
// registry.ErrBackend). Store.Restores counts recoveries
// (TestRestoredSnapshotIsRecovered, with etcdutl, with and without
// --bump-revision; TestOlderMetaIsRecovered). Every replica that saw more
// recovers on its own next step; recoveries only raise, so they compose.
//
// Across a restart of the registry process, Options.StateFile (the
// server's dataDir/etcd-state.json) keeps the watermark on disk, saved at
// most a second late (Store.Run, which Registry.Run runs) and at Close,
// plus a fence ceiling reserved FenceReserve above the highest fence
// issued, fsynced before any fence above the previous ceiling is handed
// out; at Open the global floor is raised to the ceiling. The cost is that
// fences jump by up to FenceReserve at each restart.
//
// A replica floors at what it saw: a fence issued by another replica that
// it never read is covered only by that replica's own recovery (when it
// runs, or restarts with its state file). And a process that starts after
// the restore with no state file, while no process that saw the lost
// writes runs, has nothing to compare with and reissues fences
// (TestRestoreUnseenByAFreshProcess; e2e's
// TestRegistryOnEtcdRestoredFromSnapshot shows the sidecar answering
// FENCE_REGRESSION and pausing): the sidecars are the last line there,
// and the operator raises the floor (fencegate registry floor). Keep the
// registry's dataDir on a persistent volume.
//
// Wake-ups across a restore (revisions.go): without --bump-revision the
// client resumes a watch at a revision the restored cluster has not
// reached, and it would wait there silently; a step whose reads are at an
// etcd revision below the highest this Store saw before it, and every
// recovery, start the watches again from the current revision. With
// --bump-revision --mark-compacted the resumed watch is cancelled as
// compacted and watched again (TestWakeUpAcrossRestore).
//
// # Faults
//
// Every fault below leaves the same invariant, each test checking it: no
// fence is issued twice, the fences of a resource's successive grants
// strictly increase, and nothing is decided on a stale view. What makes
// it hold is the step: linearizable reads (a member that cannot reach a
// quorum cannot answer them), a commit that compares every key read, and
// idempotent request IDs.
//
//   - Unavailability, and the retry it gets. Every request of a step
//     requires a leader (clientv3.WithRequireLeader): a member without one
//     answers "no leader" at once instead of holding a read until its
//     request timeout. etcd reports no leader, leader changed, its request
//     timeouts and a stopped server as gRPC Unavailable, and the client
//     reports an unreachable member the same way; an attempt that gets no
//     answer within Options.AttemptTimeout (the client waits for a ready
//     connection, so a dead or black-holed only member would otherwise
//     hang the step until the caller's deadline) counts as the same. Such
//     a step is run again, whole, on fresh reads, with a short backoff,
//     for Options.RetryFor after the first unavailability; then it fails
//     with registry.ErrBackend and ErrUnavailable (the API's 503). The
//     retry is the same for a commit known not to have applied (a read
//     failed, the connection was refused) and for one whose outcome is
//     unknown (the answer was lost, the leader changed after the
//     proposal): a commit that did apply is read by the next attempt like
//     any other write (an acquire finds its request ID and returns the
//     lease already granted; a release finds the lease released), and one
//     that applies late, after the next attempt's reads, changes a key
//     that attempt compares, so its commit fails and the step reads again.
//     Re-running is therefore what a client's retry with the same request
//     does, sooner. TestAmbiguousCommitRunsAgain (a commit applied, its
//     answer lost: the step runs again and writes nothing more),
//     TestNoQuorumRefusedThenRetried (two of three members down: refused
//     after RetryFor; retried until the quorum is back).
//   - Leader killed. A replica on the followers, or on every member, rides
//     the election out inside the Store (TestLeaderKilledDuringAcquires:
//     the acquires left unknown are sent again with the same request ID;
//     TestLeaderKilledUnderItsOwnReplica: the replica on every member
//     returned no error across the kill). A replica whose only endpoint is
//     the killed leader fails every call with ErrBackend until the member
//     is back, then its retried requests return the grant they may already
//     have had or a higher fence (TestLeaderKilledUnderItsOwnReplica).
//   - A member partitioned from its peers (internal/etcdtest's gates).
//     A replica whose client reaches only that member cannot read
//     linearizably: it refuses acquires and status reads with ErrBackend,
//     even for a lease the majority ended meanwhile (it never states it
//     HELD), while a replica on the majority grants. Its wake-up watch,
//     which requires a leader, is cancelled by the member and watched
//     again (refused until the heal, then confirmed) from the revision
//     after the last it saw, so an end the majority committed meanwhile
//     still wakes its waiters (notify.go). Healed, its retried
//     requests are granted above every fence the majority issued
//     (TestPartitionedMemberRefuses).
//   - A replica paused (SIGSTOP) past its leases' TTLs keeps nothing that
//     decides: resumed, it reads etcd for every answer, and expiry is
//     decided on the clock, which ran on. Its holder's renewal is refused,
//     the lease's status is not HELD, the new holder's is, and a sidecar
//     refuses the old holder's write once the new holder's was accepted
//     (e2e's TestRegistryReplicaPausedOnEtcd, real registry processes).
//
// # Lease expiry across replicas
//
// Lease expiry is decided, as on every backend, at the registry's time
// (registry/time.go; docs/design.md section 10, "The registry's time
// across replicas"): each replica's clock raised to the latest time any
// replica committed a lease decision at (registry.Meta.Time, read in the
// step's own transaction), by at most registry maxClockSkew. etcd leases
// are not used: the grant's exp is signed by the registry and judged by
// the sidecars on their clocks whatever etcd expires, and the bound is
// one rule for every backend. TestReplicaClockStepped steps a replica's
// clock back and forward.
//
// The registry server's etcd section sets RetryFor and AttemptTimeout
// (etcd.retryFor, etcd.attemptTimeout).
package etcd
