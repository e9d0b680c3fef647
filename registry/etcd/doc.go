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
// Inside one process, steps are serialized by a mutex (writes
// exclusively, views shared): every write reads and writes the meta key,
// so concurrent writes would only conflict with each other. Conflicts
// then come from other processes sharing the keyspace. Several replicas
// add availability, not write throughput: the meta key serializes every
// write, as on bolt and redis.
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
// (TestReleaseWakesWaiterOnOtherReplica, TestCommitWritesWakeUp). The
// wake-up keys stay, one per resource ever ended.
//
// # The watermark: etcd's revision and the registry's
//
// registry/redis keeps a watermark of the registry's revision, epoch and
// fences, announced between processes over pub/sub, because a Redis
// failover or restore can silently go back. etcd's revision gives most of
// that for free: it is one linearizable counter that only a restore from
// a snapshot or a wiped cluster can move back, every read of a step
// after the first is at the first's revision, and every commit compares
// mod revisions, so no replica needs to hear what another wrote (its
// next linearizable read sees it). What is left is to notice a restore:
// etcdutl snapshot restore without --bump-revision moves etcd's revision
// back, and with --bump-revision moves it forward while the data (the
// registry's own Meta.Revision and epoch) goes back. So each Store keeps
// the highest registry Meta.Revision and issuer epoch it read or wrote
// (watermark.go), taken before each step's first read, and a meta below
// it is ErrRolledBack (with registry.ErrBackend): nothing is decided on
// it. That is a fail-closed detection only, in the running process:
// recovery (an epoch bump and fence floor before anything is issued, as
// registry/redis's recover.go does), a state file across restarts, and
// restore tests with etcdutl are the next step of issue 24.
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
// clock back and forward. Partition and paused-replica fault tests are
// not written yet.
package etcd
