// Package redis is the fenced store backend on Redis (go-redis v9): one
// store shared by every sidecar replica of a service, so that "stale" is
// decided once for all pods instead of once per pod.
//
// # One implementation of the acceptance rules
//
// Every transition decides through the pure functions of package store
// (store.Decide, store.ApplyCommit, ApplyMarkUnknown, ApplyAbort,
// ApplyResolve, ApplyPause, ApplyResume, ApplyEnforcement, PlanCompaction),
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
// the server makes it. Only appendonly yes with appendfsync always keeps
// every acknowledged write across a server crash (the fault test kills the
// server with SIGKILL under that setting); the default everysec can lose
// up to a second of acknowledged writes, and replication to a replica is
// asynchronous, so a failover can lose acknowledged writes too (WAIT is not
// used). A lost Begin or Commit can make a resource accept a segment
// again; operators who need the single-pod guarantee of store/bolt across
// Redis failures must run Redis with fsync always and no failover, or
// accept that window.
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
// The store never reads a clock: every input carries Now, and deadlines
// are compared with the caller's Now. With several replicas sharing the
// store, a marker's deadline written by one replica is judged by another
// replica's clock, so the replicas' clock skew shifts when an in-flight
// mutation counts as expired; a later change will bound that. (The retry
// backoff sleeps, but decides nothing.)
package redis
