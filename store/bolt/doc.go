// Package bolt is the embedded, durable fenced store backend and the default:
// one bbolt file per sidecar.
//
// It is a store.TxStore (bolt.go) whose store.Tx is a bbolt transaction
// (tx.go, compact.go) over the buckets below, JSON-encoded (codec.go,
// schema.go); the Store methods are those of store.NewTxBackend, which
// load, decide through the pure functions of package store and write the
// change in one transaction.
//
// # Durability and grouping
//
// Every write runs in a bbolt read-write transaction with bbolt's default
// NoSync=false, so a call returns only after its transaction is on disk
// (bbolt v1.5.0 fdatasyncs twice per commit: data pages, then the meta page).
// Concurrent writes, typically on different resources, are grouped so they
// share one transaction and its fsyncs: by default (GroupCommit) a single
// committer goroutine takes every write waiting when the previous transaction
// finishes, without a timer, so a lone writer pays no added latency. Before
// it closes a group it yields to the goroutines that are runnable, for as
// long as that brings more writes: a writer's send hands the CPU straight to
// the committer, so on a process with fewer CPUs than busy goroutines (the
// sidecar pinned to one CPU) it would otherwise commit nearly every write
// alone, two fdatasyncs each, and throughput fell as workers were added
// (issue 12; see internal/boltgroup). Grouping changes how many writes share a
// transaction, never when a call returns: only after its transaction is on
// disk.
// BoltBatch uses bbolt's DB.Batch (timer-based, MaxBatchDelay) and NoGrouping
// one transaction per call; both exist for comparison (see the benchmarks).
// A write whose function fails is rolled back with its group, and every
// member of that group is re-run in its own transaction, so one failure never
// drops another's write. Write functions are therefore re-runnable: they
// re-read and re-decide every time.
//
// Update runs its function in a read-only transaction first: decisions that
// write nothing (REPLAY, STALE_OWNER, BUSY, SEGMENT_GAP, PAUSED,
// MUTATION_UNKNOWN without an expired marker, and errors such as
// ErrNotInFlight) are answered from it and cost no fsync; a read of a
// committed snapshot is linearizable. At its first write the function
// stops and runs again, deciding anew, inside the write transaction.
//
// # File format
//
// Buckets, one per concern:
//
//	meta        "format" = "fencegate.store", "schema" = decimal SchemaVersion,
//	            "generation" = the file's generation (32 hex digits)
//	records     resource                                 → JSON store.Record
//	receipts    resource 0x00 fence(8, BE) seq(8, BE)    → JSON store.Receipt
//	ops         resource 0x00 operationID 0x00 fence(8)  → receipts key
//	quarantine  resource 0x00 quarantine ID              → JSON store.Quarantine
//	inflight    resource → "" (index: records with a mutation in flight or unknown)
//	paused      resource → "" (index: paused records)
//	enforcement route shape                              → JSON store.Enforcement
//	trust       kid                                      → JSON store.TrustedKey
//
// Resources and roots never contain NUL (store validation forbids control
// characters), so the composite keys are unambiguous. Open refuses a file
// whose schema version differs from SchemaVersion; any change of the stored
// JSON shape of store types must bump it (a golden test pins the encoding).
// The enforcement bucket was added within schema 1: Open creates it in a file
// that lacks it, and older binaries ignore it.
// So were the trust bucket and the meta "generation" (Open writes a random
// one, once, into a file that lacks it: a file created anew, after a
// deletion or on a new volume, has another generation, which the outside
// anchor catches), and the optional record members "lineage" (in evidence)
// and "priorLineages", the marker cause and pause reason STORE_LOSS. Older
// binaries ignore the new members and keys; one that rewrites a record
// drops its lineages, so a later lower fence of a prior lineage is
// FENCE_REGRESSION (a pause) instead of STALE_OWNER: the safe direction; it
// reads STORE_LOSS as a cause other than DEADLINE (no Abort) and as a pause
// (RESOURCE_PAUSED). The optional "owner" member of receipts and in-flight
// markers was added within schema 1 too: older files read back ownerless (and the sidecar shows
// an ownerless receipt to no worker), older binaries ignore the member, and a
// downgraded binary that rewrites a marker drops its owner, so that receipt
// ends up ownerless: the safe direction.
//
// # Compaction
//
// Compact is one Update: it plans in the read-only run, walking each
// resource's receipts from its oldest key and stopping at the first one
// kept, and, at the first deletion, plans again and deletes in one durable
// write transaction of at most MaxDeletes deletions (receipts with their ops
// index entries, quarantine entries). bbolt does not shrink the file: freed
// pages are reused by later writes, so with retention the file stays flat.
package bolt
