// Package redis is the fenced store backend on Redis (go-redis v9): one
// store shared by every sidecar replica of a service, so that "stale" is
// decided once for all pods instead of once per pod.
//
// # One implementation of the acceptance rules
//
// Every transition decides through the pure functions of package store
// (store.Decide, store.ApplyCommit, ApplyMarkUnknown, ApplyAbort,
// ApplyResolve, ApplyPause, ApplyResume, ApplyRepair, ApplyEnforcement,
// ApplyTrust, PlanCompaction),
// exactly like store/memory and store/bolt, under optimistic concurrency:
//
//  1. one pipeline WATCHes the resource's record key and quarantine hash
//     (and, for Begin, Commit and Resolve, the receipt key of (fence, seq))
//     and GETs the record and the receipt;
//  2. the pure function decides on what was read;
//  3. its Change is written in MULTI/EXEC: the record with the global
//     indexes, the receipt with its indexes, the merged quarantine entry
//     (read with HGET under the same WATCH), the counters. A decision
//     that writes nothing still sends an empty MULTI/EXEC (a PING), so
//     that the reads are confirmed to be one snapshot;
//  4. EXEC returning nil (redis.TxFailedErr: a watched key changed) means
//     another writer won the race: the attempt is discarded and re-run
//     from step 1 after a jittered backoff, at most Options.MaxAttempts
//     times (DefaultMaxAttempts); past that the call fails with
//     ErrContention and has written nothing (fail closed).
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
// fence below one already accepted, or forget an UNKNOWN outcome. Two
// checks keep that from happening; neither ever lowers or resets a fence.
//
// The generation marker P:gen is a random ID written once with SET NX,
// when the first sidecar opens an empty store. With
// Options.GenerationFile set (the sidecar uses dataDir/redis-generation.json),
// Open records the marker in that local file (fsynced), or, when the file
// already names one, compares: a missing or different marker means the
// data set is not the one this sidecar wrote to. Every transition then
// reads the marker in the same pipeline as its WATCH and record GET (one
// more key, no extra round trip), and so do Record, Records and the list
// calls; a mismatch, at
// Open or on any call, fails the whole store closed: every call returns
// ErrGenerationChanged (the proxy answers STORE_UNAVAILABLE and logs it)
// until an operator acknowledges (the sidecar admin API's POST
// /v1/store/acknowledge-loss, Options.AcknowledgeGenerationChange, or
// deleting the local file and restarting, or AcknowledgeGeneration), which
// adopts the marker Redis now has. A marker missing after a restart is not
// rewritten by the Open of a sidecar that knew the old one, and the new one
// that Generation writes matches no sidecar's, so every replica that saw
// the old data set stays closed.
//
// The expectation can instead come from outside the pod, which is what
// catches a new pod on an empty disk: Options.ExpectedGeneration (and
// Store.ExpectGeneration, to change it) make every call check the marker
// against a generation the caller keeps (the sidecar registers
// Store.Generation with its registry and expects what the registry
// anchored), with the same fail-closed effect and no local file.
// Generation creates the marker (SET NX) when it is missing, so an emptied
// Redis answers a new generation, which the registry refuses as another
// data set until an operator acknowledges it.
//
// The marker is written once, so a restore of an older copy of the same
// data set keeps it: that is caught by the per-resource checkpoints of
// package store/guard, which the sidecar wraps around this store. Each
// sidecar keeps locally the highest fence, last segment and outstanding
// UNKNOWN it saw per resource, and a Begin that finds Redis's record
// below them is refused FENCE_REGRESSION and pauses the resource. (A
// global write counter P:epoch, bumped in every MULTI, would catch such a
// rollback store-wide; it is not kept, because the checkpoints catch it
// where it matters, per resource, without a hot global key.) The
// checkpoints only know what their own sidecar saw; the outside anchor's
// per-resource progress (Store.Repair, docs/design.md "Store loss and
// repair") catches such a rollback for every replica, a new pod included.
//
// What each Redis setting guarantees:
//
//   - appendonly yes, appendfsync always, one primary: no acknowledged
//     write is lost on a crash; the checks only fire on operator error
//     (files deleted, an old backup restored, FLUSHALL);
//   - appendfsync everysec: up to a second of acknowledged writes can be
//     lost on a crash; the checkpoints catch a lost fence or UNKNOWN of a
//     resource this sidecar touched (a write another replica made and
//     lost is caught only by that replica's checkpoints);
//   - a replica promoted by failover (asynchronous replication) can lose
//     acknowledged writes: the marker survives, and the checkpoints catch
//     what each sidecar saw; with MinReplicas covering every replica a
//     failover may promote, it loses none;
//   - no persistence: a restart empties the store; the marker catches it.
//
// After a loss the operator restores the newest data there is, raises the
// registry's fence floor (or bumps its epoch) above every fence issued,
// acknowledges the generation on each sidecar, reconciles unknown
// outcomes, and resumes the paused resources. Nothing is reset.
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
