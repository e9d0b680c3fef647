// Package redis is a registry backend on Redis (go-redis v9): the same
// pure decisions as registry/memory and registry/bolt, applied under
// Redis optimistic concurrency, so several registry processes can share
// one Redis primary.
//
// # Design: a registry.TxStore over WATCH/MULTI
//
// Store implements registry.TxStore, and OpenBackend wraps it with
// registry.NewTxBackend, like bolt and memory. That reuses the snapshot
// loaders and decisions of package registry unchanged; implementing
// registry.Backend directly would mean copying every loader (loadAcquire,
// loadLease, ...) and writeChange for one backend. The Tx interface maps
// onto optimistic concurrency without strain:
//
//   - a read in the callback is a WATCHed GET: WATCH key and GET key are
//     pipelined on the step's own connection (one round trip, WATCH first,
//     so any change of the key after the read makes EXEC fail);
//   - writes are buffered (a later read in the same step sees them) and
//     sent in one MULTI/EXEC when the callback returns;
//   - EXEC refused because a WATCHed key changed writes nothing; the whole
//     step (reads, decision, seal) runs again on fresh reads, at most
//     Options.MaxAttempts times, with a short jittered backoff; after the
//     last conflict the step fails with registry.ErrBackend and
//     ErrContention: an error, never a decision over a stale snapshot;
//   - a View is the same without writes: its EXEC (of a PING) only checks
//     that none of the keys it read changed, so a status proof states a
//     consistent snapshot, retried like a write;
//   - a step WATCHes only the keys it reads (no key is WATCHed up front),
//     so the anchor steps of fenced stores (tx_anchor.go), which read the
//     lineage without WATCHing the meta and write no meta, never conflict
//     with lease writes, nor lease writes with them
//     (TestAnchorStepsDoNotConflictWithLeases); the one read a step makes
//     without WATCHing it, that lineage, is still checked against the
//     watermark;
//   - EachLease (compaction only) walks the lease keys with SCAN, from
//     where the previous walk of this Store stopped, examining at most
//     Options.ScanLimit leases per compaction; each lease it hands over is
//     a WATCHed read, so a lease changed before EXEC is not deleted.
//
// go-redis's own retries are off (MaxRetries -1): a command whose reply
// was lost may have run, and an EXEC re-sent on a new connection would
// run without its WATCH. A connection failure fails the step with
// registry.ErrBackend (its outcome unknown to the caller, as the registry
// documents for that error); the caller acquires again with the same
// request ID and gets the same lease back if the write did land.
//
// Inside one process, steps are serialized (writes exclusively, views
// shared: the Shell of registry/internal/txstore, which registry/etcd
// uses too, as it does txstore's Records, the meta, resource and lease
// reads and writes of tx.go over its WATCHed GETs and buffered writes):
// they would otherwise all conflict on the meta key (below) and burn
// attempts against each other. WATCH conflicts then come only from other
// processes sharing the keyspace.
//
// # Keys
//
// Every key starts with the prefix (Options.Prefix, default "fgreg") as a
// hash tag: {fgreg}:schema, {fgreg}:meta, {fgreg}:policies (a hash,
// pattern -> policy), and one key per record: {fgreg}:res:<resource>,
// {fgreg}:lease:<id>, {fgreg}:req:<owner>\x00<requestId>,
// {fgreg}:dig:<digest>; for the anchors of fenced stores
// {fgreg}:store:<store>, {fgreg}:ledger:<store>,
// {fgreg}:anc:<store>:<resource> and the sorted set {fgreg}:ancidx:<store>.
// Values are the same JSON as bolt's. The tag is the prefix and not the
// resource because a step reads the global meta and
// policies along with the resource's keys, and a MULTI/EXEC (or WATCH)
// cannot span Cluster slots; with one tag the whole registry is one slot.
//
// # The meta key: throughput and Cluster
//
// The meta (issuer epoch, revision, global fence floor, policy sequence)
// is read by every decision and written by every write (the revision
// counts writes). So every write of the registry conflicts with every
// other concurrent write, whatever the resources: writes are serialized
// globally, like bolt's single writer. Throughput is bounded by one
// step's latency (five WATCHed reads and an EXEC with an fsync: about a
// millisecond on loopback, see BenchmarkAcquire); several registry
// processes do not add write throughput, they add conflicts and retries.
// On a Redis Cluster the registry lives in one slot, on one shard, and
// gains nothing from the others. A single primary is assumed: replication
// is asynchronous, so a replica promoted by a failover (Sentinel, Cluster)
// may lack acknowledged writes and reissue a fence. Do not run the
// registry on a failover setup without raising the fence floors
// (RaiseFenceFloor) past every fence issued before the failover.
//
// # Wake-ups across processes
//
// A waiting acquire (registry.AcquireRequest.Wait) is woken in its own
// process when a lease there ends; a lease released on another process
// sharing the Redis would reach it only at its timer (the holder's
// expiry). So the step that ends a lease (a release, a revocation, a
// renewal that records an expiry; not an acquire that closes an expired
// holder to grant the resource itself) PUBLISHes "<origin> <resource>" on
// the channel {prefix}:ended inside its MULTI: the wake-up leaves with the
// commit, exists exactly when the end does, and costs no round trip of its
// own. The backend OpenBackend returns implements registry.Notifier for
// what is not one lease's end: an epoch bump publishes an empty resource
// (every waiter). Each Store holds one SUBSCRIBE connection, opened by
// Registry.Run and closed when it returns or by Close, that wakes the
// head waiter of the resource in its process (its own messages, by
// origin, are skipped).
// Pub/sub is at-most-once: a message published while a subscriber is
// reconnecting is lost. That only costs latency: a woken waiter decides
// by a fresh acquire, never by the message, and an unwoken one still
// wakes at its timer. BenchmarkHandoffAcrossProcesses measures a release
// on one process to the grant on another.
//
// # Restoring an older Redis
//
// A Redis restored from a backup (an RDB or AOF copied earlier), failed
// over to a lagging replica, or restarted empty has forgotten the fences
// issued since: the next acquire would hand them out again. Each registry
// process keeps a watermark (watermark.go, over the shared
// registry/internal/rollback that registry/etcd uses too): the highest
// revision, issuer epoch, policy generation and fence it has read,
// written, or heard another process announce (every committed write PUBLISHes the state it reached on
// {prefix}:state inside its MULTI, so the announcement exists exactly when
// the write does). Redis only ever raises those numbers, so a step whose
// meta read comes back below the watermark as it stood when the read was
// sent proves a rollback (an announcement heard while the read is on its
// way may be of a later write: TestNoFalseRollbackBetweenProcesses), and before
// that step decides anything the process recovers (recover.go): in one
// transaction it bumps the issuer epoch above every epoch it saw (every
// earlier grant, recorded or forgotten, reads REVOKED), raises the global
// fence floor above every fence it saw or issued, and sets the revision
// above every revision it saw. Then the step runs again: the first grant
// after the restore exceeds every fence and epoch issued before it
// (TestRestoredSnapshotIsRecovered, with a real old RDB and a real old AOF;
// TestRestartedEmptyIsRecovered; TestRestoreSeenByEveryProcess with two
// processes). Every process that saw more recovers on its own next step;
// recoveries only raise, so they compose.
//
// Across a restart of the registry process, Options.StateFile (the
// server's dataDir/redis-state.json) keeps the watermark on disk, saved at
// most a second late (Store.Run, which Registry.Run runs) and at Close, plus a fence ceiling reserved
// FenceReserve above the highest fence issued, fsynced before any fence
// above the previous ceiling is handed out. At Open the global floor is
// raised to the ceiling, so a restarted process never reissues a fence it
// issued, even after a crash and a restore to a copy from its last second
// (which its saved revision may not reveal). The cost is that fences jump
// by up to FenceReserve at each restart.
//
// What it cannot see: a process that started after the restore with no
// state file (an empty disk), while no process that saw the lost writes
// is running, has nothing to compare with, and reissues fences. The
// sidecars are the last line there: a fence already accepted under another
// operation root is FENCE_REGRESSION, a lower one STALE_OWNER; the
// operator then raises the floor (fencegate registry floor) past the
// highest fence the sidecars report. Keep the registry's dataDir on a
// persistent volume.
//
// # Durability
//
// Fences and leases survive a Redis crash only when the server runs with
// appendonly yes and appendfsync always: then every EXEC is written to the
// AOF and fsynced before its reply, so an acquire that returned a fence
// has it on disk. With appendfsync everysec an acknowledged write can be
// lost in a power failure, and with persistence off in any restart; a
// failover to an asynchronous replica can lose them too. The watermark
// (above) then meets the lost state with an epoch bump and a floor, as far
// as the running processes saw it. Options.MinReplicas closes the failover
// case: a write is answered only once that many replicas acknowledged it
// (WAIT after EXEC), so a failover to one of them keeps every fence
// answered (TestMinReplicas).
// This package does not (cannot portably: CONFIG may be disabled) check
// the persistence settings; operators must. It does check, at Open, that
// maxmemory-policy is noeviction (an evicted key forgets issued fences):
// ErrEvictionPolicy otherwise, unless Options.AllowEviction; when CONFIG
// is disabled it logs a warning and opens. Out of memory, every write and
// every view (its confirming MULTI is refused too) fails with ErrBackend,
// writing nothing.
package redis
