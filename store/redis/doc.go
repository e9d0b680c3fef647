// Package redis is the fenced store backend on Redis (go-redis v9): one
// store shared by every sidecar replica of a service, so that "stale" is
// decided once for all pods instead of once per pod.
//
// # One implementation of the acceptance rules
//
// The backend is a store.TxStore (txn.go) whose store.Tx is a WATCH and a
// MULTI (tx.go, compact.go) over the keys below, JSON-encoded (codec.go);
// the Store methods are those of store.NewTxBackend, which decide through
// the pure functions of package store (store.Decide, store.DecideCommit,
// DecideMarkUnknown, DecideAbort, DecideResolve, DecidePause,
// DecideResume, DecideRepair, DecideEnforcement, DecideTrust,
// PlanCompaction), exactly like store/memory and store/bolt, under
// optimistic concurrency:
//
//  1. one pipeline WATCHes the resource's record key and quarantine hash
//     (and, for Begin, Commit and Resolve, the receipt key of (fence, seq))
//     and GETs the record and the receipt, with the server's TIME
//     (tx.Load);
//  2. the pure function decides on what was read;
//  3. its Change is queued and written in MULTI/EXEC: the record with the
//     global indexes, the receipt with its indexes, the merged quarantine
//     entry (read with HGET under the same WATCH), the counters. A
//     decision that writes nothing still sends an empty MULTI/EXEC (a
//     PING), so that the reads are confirmed to be one snapshot;
//  4. EXEC returning nil (redis.TxFailedErr: a watched key changed) means
//     another writer won the race: the attempt is discarded and re-run
//     from step 1 after a jittered backoff, at most Options.MaxAttempts
//     times (DefaultMaxAttempts); past that the call fails with
//     ErrContention and has written nothing (fail closed).
//
// Reads (store.TxStore.View) go to the client as they come, each Tx read
// one pipeline: Record one round trip, the list calls two (an index, then
// what it names). Compact gives each resource its own transaction
// (store.TxOptions.CompactEachResource), so a busy resource retries alone.
//
// So there is no second implementation of the decision table (a Lua script
// would be one, and could drift). The price is two round trips per call
// (the benchmark counts them: 4 per accepted write, Begin plus Commit) and
// retries under contention on one resource, which is rare: one owner
// writes a resource at a time.
//
// # Keys
//
// With prefix P (Options.Prefix, "fg" by default, so several services can
// share a server) and R the resource with '%', ':', '{' and '}' escaped
// (%25, %3A, %7B, %7D):
//
//	P:{R}:rec                 JSON store.Record
//	P:{R}:rcpt:<fence>:<seq>  JSON store.Receipt (written once)
//	P:{R}:ops:<operationID>   set of fences holding a receipt for that op ID (escaped like R)
//	P:{R}:rcpts               sorted set, all scores 0, members "%020d:%020d" (fence, seq):
//	                          the resource's receipts in (fence, seq) order, for compaction
//	P:{R}:q                   hash quarantine ID → JSON store.Quarantine
//	P:res                     set of resources with a record
//	P:unknown                 set of resources with a mutation in flight or unknown
//	P:paused                  set of paused resources
//	P:quar                    set of resources with quarantine entries
//	P:n:rcpt, P:n:quar        receipt and quarantine counters (Stats)
//	P:bytes                   total length of the stored JSON values (Stats)
//	P:enf                     hash route shape → JSON store.Enforcement
//	P:gen                     the store's generation marker: a random ID written once (SET NX)
//	P:trust                   hash kid → JSON store.TrustedKey (the trust pins, one unit)
//
// The JSON shapes are those store/bolt stores (pinned by its golden test).
// The escaping keeps every key segment free of ':' and braces, so keys of
// different resources never collide and the hash tag {R} is exactly the
// escaped resource.
//
// # A single primary, not Cluster
//
// The keys of one resource share the hash tag {R}, so a Cluster would keep
// them on one shard; but the global indexes and counters (P:res, P:unknown,
// ...) are written in the same MULTI as the record, and they live in other
// slots, which Redis Cluster refuses (CROSSSLOT). The backend therefore
// targets a single primary (standalone, or Sentinel-managed through a
// failover client); New refuses a *redis.ClusterClient. The hash tags keep
// a later move to Cluster open (indexes per shard, or on one slot).
//
// The global indexes are not watched: they are derived from the record and
// written in the same MULTI whenever the record is, and records of one
// resource are serialised by the WATCH of its record key, so each index
// always reflects the latest record of every resource. The list calls
// (ListUnknown, ListPaused, ListQuarantined) read an index, then the
// records it names, and filter on the record, so a resource that changed
// in between is reported as it is now.
//
// # Durability
//
// A call returns once EXEC has been answered: the write is as durable as
// the server makes it. (See "Data loss" for what the sidecar detects when
// the server loses writes.) Only appendonly yes with appendfsync always keeps
// every acknowledged write across a server crash (the fault test kills the
// server with SIGKILL under that setting); the default everysec can lose
// up to a second of acknowledged writes, and replication to a replica is
// asynchronous, so a failover can lose acknowledged writes too, unless
// Options.MinReplicas makes every write wait (WAIT, on the transaction's
// connection, after EXEC) until that many replicas acknowledged it; a
// write they do not acknowledge within ReplicaTimeout fails closed
// (redisconf.ErrNotReplicated; TestMinReplicas). A lost Begin or Commit can
// make a resource accept a segment again; operators who need the single-pod
// guarantee of store/bolt across Redis failures run Redis with fsync always
// and either no failover or MinReplicas equal to the replicas a failover
// may promote.
//
// # Data loss
//
// A Redis that restarted empty (no persistence, files lost, FLUSHALL) or
// came back from an old RDB/AOF would otherwise let a sidecar accept a
// fence below one already accepted, or forget an UNKNOWN outcome. The
// sidecar catches both outside the pod, with the store's outside anchor
// at the registry (package store/anchor, docs/design.md "Store loss and
// the outside anchor"); this store provides what it needs. Nothing here
// ever lowers or resets a fence.
//
// The generation marker P:gen is a random ID written once with SET NX:
// Generation creates it when it is missing, so an emptied Redis answers a
// new generation, which the registry refuses as another data set
// (STORE_LOST) until an operator acknowledges it there. The sidecar
// registers Store.Generation and then expects what the registry anchored
// (Options.ExpectedGeneration at Open, Store.ExpectGeneration later):
// every transition reads the marker in the same pipeline as its WATCH and
// record GET (one more key, no extra round trip), and so do Record,
// Records and the list calls; a missing or different marker fails the
// whole store closed, every call returning ErrGenerationChanged (the
// proxy answers STORE_UNAVAILABLE), and the anchor then registers the new
// marker and waits for the acknowledgement.
//
// The marker is written once, so a restore of an older copy of the same
// data set keeps it: that is caught per resource by the anchor's progress,
// which the Begin's Prior must cover (Store.Repair then raises the record
// to the anchor and pauses it), for every replica, a new pod included. (A
// global write counter P:epoch, bumped in every MULTI, would catch such a
// rollback store-wide; it is not kept: the anchor catches it where it
// matters, per resource, without a hot global key.)
//
// Options.GenerationFile, a local file that records the marker a sidecar
// saw, is what earlier sidecars used instead (with the per-resource
// checkpoints of store/guard); the sidecar no longer sets it, and reads
// such a file once at the upgrade.
//
// What each Redis setting guarantees, with the anchor:
//
//   - appendonly yes, appendfsync always, one primary: no acknowledged
//     write is lost on a crash; the checks only fire on operator error
//     (files deleted, an old backup restored, FLUSHALL);
//   - appendfsync everysec: up to a second of acknowledged writes can be
//     lost on a crash; the anchor catches every anchored state lost (a
//     fence, a segment, the mutation in flight, a pause), in every
//     replica, as paused resources with UNKNOWN mutations to settle;
//   - a replica promoted by failover (asynchronous replication) can lose
//     acknowledged writes: the marker survives, and the anchor catches what
//     was lost, as above; with MinReplicas covering every replica a
//     failover may promote, nothing is lost and nothing pauses;
//   - no persistence: a restart empties the store; the marker catches it.
//
// After a loss the operator restores the newest data there is,
// acknowledges the new generation once at the registry (fencegate store
// acknowledge-loss), reconciles the unknown outcomes, and resumes the
// paused resources. Nothing is reset.
//
// # Errors
//
// A Redis error (connection refused or lost, a timeout, OOM, READONLY) is
// returned wrapped with the prefix "store/redis: " and wraps none of the
// store's sentinel errors, so it is never mistaken for a decision; the
// proxy fails closed on it. An error that arrives after EXEC was sent
// leaves the outcome of that call unknown (like an fsync error in bolt): a
// Begin may have marked its mutation in flight, which its owner then finds
// BUSY (or reconciles). Once a call has started it runs to completion
// whatever its context does; the client's timeouts bound it.
//
// # Time
//
// The store's rules compare times (an in-flight marker's deadline, a
// receipt's age under retention), and several replicas share the store, so
// they must compare on one clock. By default every transition decides at
// the server's TIME, read in the same pipeline as its WATCHed reads (no
// extra round trip): a Begin's Now becomes TIME and its Deadline and
// QuietAt TIME plus the windows the sidecar asked for, Commit and Resolve
// stamp receipts with TIME, a Resolve's evidence of "not applied" is placed
// at TIME minus its age (the sidecar measures the age, never a wall time),
// Compact ages receipts by TIME, and ListUnknown asks TIME first. So a
// marker written by one replica expires, and becomes quiet, at the same
// moment for all of them, whatever their clocks' skew
// (TestReplicasShareTheServerClock, TestNotAppliedDecidesOnServerClock).
// Options.CallerClock keeps each input's Now instead, for tests that drive
// a virtual clock. Skew still shows in one place, harmlessly: the
// Retry-After a sidecar computes from a marker's deadline. No decision
// depends on a sidecar's clock. (The retry backoff sleeps, but decides
// nothing.)
package redis
