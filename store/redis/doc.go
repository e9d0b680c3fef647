// Package redis is the fenced store backend on Redis (go-redis v9): one
// store shared by every sidecar replica of a service, so that "stale" is
// decided once for all pods instead of once per pod.
//
// # One implementation of the acceptance rules
//
// The backend is a store.TxStore (txn.go) over the keys below,
// JSON-encoded (codec.go); the Store methods are those of
// store.NewTxBackend, which decide through the pure functions of package
// store (store.Decide, store.DecideCommit, DecideMarkUnknown,
// DecideAbort, DecideResolve, DecidePause, DecideResume, DecideRepair,
// DecideEnforcement, DecideTrust, PlanCompaction), exactly like
// store/memory and store/bolt, under optimistic concurrency. A transition
// (Begin, Commit, MarkUnknown, Abort, Resolve, Pause, Resume, Repair) is
// one round trip in the steady state:
//
//  1. the Store's cache (cache.go) answers Load: the record this process
//     last read or wrote for the resource, and the receipt of (fence,
//     seq), presumed absent when the cache has none (a segment's receipt
//     is read before it exists); a record key the cache does not hold is
//     read from the server with the receipt, the generation marker and
//     TIME in one pipeline (tx.loadStep). Each value answered joins the
//     step's read set, as a WATCH would have;
//  2. the pure function decides on those values, at the Store's estimate
//     of the server's clock (see "Time"), and its Change is buffered as
//     ops (the record with the global indexes, the receipt with its
//     indexes, the merged quarantine entry, the counters, the trim);
//  3. one step script (step.lua, sent with EVALSHA inside MULTI/EXEC:
//     one round trip, whose EXEC is the commit point as it was the WATCH
//     transaction's) checks that the generation marker is the one
//     expected, that every key of the read set still holds the value the
//     decision read (GET, HGET for a quarantine field; absent included),
//     and that the decision's time is within StepBehind / StepAhead of its
//     TIME; only then does it apply the ops, from a fixed whitelist (SET,
//     DEL, SADD, SREM, ZADD, ZREM, HSET, INCRBY, and trim: the oldest
//     receipts beyond Commit's KeepReceipts, at most
//     store.MaxTrimPerCommit, each with its operation-index entry,
//     receipts-index member and share of P:n:rcpt and P:bytes, exactly as
//     DeleteReceipt does), and returns TIME. A decision that writes
//     nothing (REPLAY, BUSY, STALE_OWNER, a decision error such as
//     ErrNotInFlight) is the same script with no ops: its reads confirmed
//     as one snapshot, one round trip;
//  4. on any mismatch the script writes nothing and returns the current
//     values of the read set and TIME (a decision refused for its time
//     alone says so, and the Store's clock estimate is reset to that
//     TIME): the cache takes them and the decision runs again on them (at
//     once the first time, then after a jittered backoff), at most
//     Options.MaxAttempts times (DefaultMaxAttempts); past that the call
//     fails with ErrContention and has written nothing (fail closed). A
//     marker that is not the one expected fails the store closed
//     (ErrGenerationChanged), writing nothing.
//
// A step holds one of the Store's slots, as many as the client's pool
// has connections, from before it decides until the script's reply, so
// that a step waiting for a connection waits before it reads its time,
// not between its decision and the script.
//
// The script decides nothing: it compares bytes and applies writes it is
// given. So there is still one implementation of the rules, in Go; the
// script cannot drift from them because it does not know them. Every
// check and every read that can fail (the trim's, a corrupt receipt
// refused with ErrCorrupt) runs before the first write, so a refused step
// writes nothing; a write that fails once writing began (a key of the
// wrong type, which only corruption makes) stops the script where it is,
// as a failed command inside EXEC always did.
//
// The cache is a guess, never trusted: every decision made on it is
// checked against the server's values before anything is written, so a
// stale entry (another replica wrote the resource) costs one more round
// trip, never a wrong decision (TestDifferentialHistories drives several
// replicas with their own caches against store/memory). It is per Store,
// bounded by entries and bytes (cacheEntries, cacheBytes: a full cache is
// some 9.7 MiB of heap, BenchmarkCacheMemory), and drops a step's keys
// when that step's outcome is unknown (see "Errors").
//
// The cost: a warm Begin and Commit are one round trip each (2 per
// accepted write, was 4), a REPLAY 1, a Commit that trims 1
// (TestRoundTripsPerTransition); a resource this Store has not read
// costs one more (the read pipeline), a stale cache or a lost race one
// more per run, and Options.MinReplicas one more (WAIT) per step that
// wrote. The first step of a Store sends the script's source (EVAL), and
// so does the step after the server lost it (NOSCRIPT: a restart): one
// more round trip then. The server pays for the round trips saved in
// script time: a step is some 7 us of EVALSHA before its first command
// and some 1.5 us per write it applies (a Commit's step, nine writes,
// measured at about 25 us), so an accepted write costs redis-server more
// CPU than the four plain round trips did (BenchmarkBeginCommit,
// server-us/op: about 70 against 45 on the machine it was measured on);
// what it saves is latency, two network round trips per write.
//
// Trim at Commit is an op of the same script, so it costs no round trip:
// it counts the resource's receipts (ZCARD of its receipts index, plus
// the receipt the step adds) and deletes the oldest beyond KeepReceipts
// (at most store.MaxTrimPerCommit) without planning. Why they are always
// deletable right after the Commit (or the applied Resolve) that wrote
// the newest receipt: a receipt is written only for the mutation in
// flight, which is always at the record's highest fence and at its last
// segment plus one, and the highest fence never goes down (but for a
// Repair's withdrawal of a fence that never had a receipt) nor the last
// segment under it, so every stored receipt is at most (highestFence,
// lastSeq) in (fence, seq) order and the newest is exactly that one. With
// keep >= 1 the newest is kept, and every older one is below the last
// accepted segment, which is what compaction may delete (store's "Why a
// compacted segment never proceeds": such a segment sent again is
// STALE_OWNER or SEGMENT_GAP, only its stored answer is lost); and the
// Commit just settled the mutation in flight, so none is in flight. The
// script checks it all the same: it deletes only index members below
// the record's last segment and below the mutation in flight, if any
// (trimBound), stopping at the first one that is not, as
// store.TrimOldest does.
//
// Compaction, the enforcement ledger and the trust pins read what the
// cache does not model (the receipts index, whole hashes): their
// transactions keep WATCH and MULTI/EXEC (modeWatch: one pipeline WATCHes
// and reads, MULTI/EXEC writes, EXEC answering nil re-runs them with the
// same MaxAttempts and ErrContention). Reads (store.TxStore.View) go to
// the client as they come, each Tx read one pipeline: Record one round
// trip, the list calls two (an index, then what it names). Compact gives
// each resource its own transaction (store.TxOptions.CompactEachResource),
// so a busy resource retries alone.
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
// ...) are written in the same step as the record, and they live in other
// slots, which Redis Cluster refuses (CROSSSLOT); the step script's trim
// also names keys it derives (a receipt's, its operation index's) rather
// than keys passed in KEYS, which only a single server allows. The
// backend therefore targets a single primary (standalone, or
// Sentinel-managed through a failover client); New refuses a
// *redis.ClusterClient. The hash tags keep a later move to Cluster open
// (indexes per shard, or on one slot).
//
// The global indexes are not read by a decision: they are derived from
// the record and written in the same step whenever the record is, and
// steps of one resource are serialised by the step script's check of its
// record key, so each index always reflects the latest record of every
// resource. The list calls (ListUnknown, ListPaused, ListQuarantined)
// read an index, then the records it names, and filter on the record, so
// a resource that changed in between is reported as it is now.
//
// # Durability
//
// A call returns once EXEC (of its step script, or of its MULTI) has been
// answered: the write is as durable as the server makes it. (See "Data
// loss" for what the sidecar detects when the server loses writes.) Only
// appendonly yes with appendfsync always keeps every acknowledged write
// across a server crash (the fault test kills the server with SIGKILL
// under that setting); the default everysec can lose up to a second of
// acknowledged writes, and replication to a replica is asynchronous, so a
// failover can lose acknowledged writes too, unless Options.MinReplicas
// makes every write wait (WAIT, on the step's connection, after EXEC: one
// more round trip) until that many replicas acknowledged it; a write they
// do not acknowledge within ReplicaTimeout fails closed
// (redisconf.ErrNotReplicated; TestMinReplicas). A lost Begin or Commit
// can make a resource accept a segment again; operators who need the
// single-pod guarantee of store/bolt across Redis failures run Redis with
// fsync always and either no failover or MinReplicas equal to the
// replicas a failover may promote.
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
// every transition's step script checks the marker before anything else
// (and its read pipeline reads it, for a resource not cached; a WATCH
// transaction reads it with its first read), and so do Record, Records
// and the list calls; a missing or different marker fails the whole
// store closed, every call returning ErrGenerationChanged (the proxy
// answers STORE_UNAVAILABLE), having written nothing, and the anchor then
// registers the new marker and waits for the acknowledgement.
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
// proxy fails closed on it. An error that arrives after the step script
// (or EXEC) was sent leaves the outcome of that call unknown (like an
// fsync error in bolt): a Begin may have marked its mutation in flight,
// which its owner then finds BUSY (or reconciles). Such a call drops the
// keys of its step from the cache, so the next transition of that
// resource reads them from the server. Once a call has started it runs to
// completion whatever its context does; the client's timeouts bound it.
//
// # Time
//
// The store's rules compare times (an in-flight marker's deadline, a
// receipt's age under retention), and several replicas share the store, so
// they must compare on one clock: the server's. A transition decides at
// the Store's estimate of the server's TIME (time.go, serverClock): the
// TIME of the latest reply (every step script's reply carries one, as
// does a read pipeline) plus the local monotonic time elapsed since it
// arrived; a reply handled late never sets it back, only the script's
// refusal of a decision's time does (so a drift of the two clocks' rates
// costs at most one refused run each time it reaches StepAhead). A
// Begin's Now becomes that time and its Deadline and QuietAt that time
// plus the windows the sidecar asked for, Commit and Resolve stamp
// receipts with it, a Resolve's evidence of "not applied" is placed at it
// minus its age (the sidecar measures the age, never a wall time), and
// Compact ages receipts by the server's TIME (read with its WATCHed
// reads), ListUnknown by TIME read first.
//
// "One clock" now means: the server's clock as the Store estimates it,
// within bounds the server itself enforces. The estimate is a lower bound
// of the server's clock: each reply's TIME was read before the reply was
// sent, and the estimate keeps the latest such reading (advanced by the
// local monotonic clock), so it lags the server by at most the round
// trip of the freshest reply (a fraction of a millisecond in one data
// centre; a loaded server's queue makes it more) and never leads it, but
// for a drift of the two clocks' rates or a server clock stepped back. The
// step script refuses a decision more than StepAhead (1 ms) after its
// TIME, which only such a drift or step back produces, and one more than
// StepBehind (250 ms) before it, an estimate gone stale (a server clock
// stepped forward), writing nothing; the decision runs again at the TIME
// it returned. (StepBehind also counts what comes after the decision, the
// network and the server's queue, which move nothing that is decided; it
// is set well above what a loaded durable server's fsyncs add, so that
// load does not make steps run again.) What the estimate costs, against
// reading TIME a round trip before the write (as the WATCH transactions
// did, and still do): a Begin's quiet time (and deadline) would be placed
// early by up to the estimate's lag, and an early quiet time would let
// "not applied" be concluded while the backend may still apply the write;
// so both are padded by StepBehind, the most the script lets a decision
// lag (store.TxOptions.ClockLag; TestQuietTimeNeverEarlyWithALaggingEstimate):
// they are never before the windows the sidecar asked for, on the
// server's clock, and at most StepBehind after them; a Resolve's
// evidence of "not applied" is placed no later than before (the estimate
// does not lead the server), give or take StepAhead. Both are far below
// the windows they shift (a quiet time is backend.timeout plus
// backend.maxApplyDelay: seconds at least; retention: minutes and more).
// So a marker written by one replica expires, and becomes quiet, at the
// same moment for all of them, within those bounds, whatever their
// clocks' skew (TestReplicasShareTheServerClock,
// TestNotAppliedDecidesOnServerClock;
// TestStepRefusesADecisionOffTheServerClock for the bounds).
// Options.CallerClock keeps each input's Now instead (the script checks no
// time then), for tests that drive a virtual clock. Skew still shows in
// one place, harmlessly: the Retry-After a sidecar computes from a
// marker's deadline. No decision depends on a sidecar's clock. (The retry
// backoff sleeps, but decides nothing.)
package redis
