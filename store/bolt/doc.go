// Package bolt is the embedded, durable fenced store backend and the default:
// one bbolt file per sidecar.
//
// It is a store.TxStore (bolt.go) whose store.Tx is a bbolt transaction
// (tx.go, compact.go, count.go) over the buckets below, records and
// receipts in the binary encoding of store/codec, the other values JSON
// (codec.go, schema.go); the Store methods are those of
// store.NewTxBackend, which load, decide through the pure functions of
// package store and write the change in one transaction.
//
// # Durability and grouping
//
// Every write runs in a bbolt read-write transaction with bbolt's default
// NoSync=false, so a call returns only after its transaction is on disk
// (bbolt v1.5.0 fdatasyncs twice per commit: data pages, then the meta page).
// Concurrent writes, typically on different resources, are grouped so they
// share one transaction and its fsyncs: by default (GroupCommit) the writes
// waiting when the previous transaction finishes form the next one (its
// oldest writer commits it; there is no committer goroutine), without a
// timer, so a lone writer pays no added latency. Before it closes a group
// it yields to the goroutines that are runnable, for as long as that brings
// more writes: on a process with fewer CPUs than busy goroutines (the
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
// write nothing (a repeated ENFORCE, a compaction with nothing due, a
// Resolve already settled, ...) are answered from it and cost no fsync; a
// read of a committed snapshot is linearizable. At its first write the
// function stops and runs again, deciding anew, inside the write
// transaction. Begin and Commit, whose decisions write in the common case
// (PROCEED, a receipt), run in the write transaction at once instead (the
// read-only run was thrown away on nearly every call, and showed in the
// profile): a run there that writes nothing commits nothing (it is left out
// of its group), and its decision is the one of a read-only run after it
// when it succeeded (REPLAY, STALE_OWNER, BUSY, SEGMENT_GAP, PAUSED,
// MUTATION_UNKNOWN without an expired marker, a Commit already made) or its
// error, returned once its group committed, when it failed
// (ErrNotInFlight): either way no fsync of its own. Under BoltBatch every
// operation runs read-only first (bbolt's Batch re-runs a whole batch alone
// at any failing function).
//
// # File format
//
// Buckets, one per concern:
//
//	meta        "format" = "fencegate.store", "schema" = decimal SchemaVersion,
//	            "generation" = the file's generation (32 hex digits)
//	records     resource                                 → store.Record
//	receipts    resource 0x00 fence(8, BE) seq(8, BE)    → store.Receipt
//	counts      resource → its number of receipts (8, BE; no key for none)
//	ops         resource 0x00 operationID 0x00 fence(8)  → receipts key
//	quarantine  resource 0x00 quarantine ID              → JSON store.Quarantine
//	inflight    resource → "" (index: records with a mutation in flight or unknown)
//	paused      resource → "" (index: paused records)
//	enforcement route shape                              → JSON store.Enforcement
//	trust       kid                                      → JSON store.TrustedKey
//
// Records and receipts are written in the binary encoding of store/codec
// (a version byte 0x01 first; its golden test pins the bytes) and read in
// it or in JSON (a value starting with '{'): schema 1 wrote them as JSON.
// Resources and roots never contain NUL (store validation forbids control
// characters), so the composite keys are unambiguous.
//
// The counts bucket is kept in step with the receipts in the transaction
// that stores or deletes one (PutReceipt counts a new key in, DeleteReceipt
// a present one out; a count read that is not 8 bytes, or is zero, or would
// go below zero, is ErrCorrupt): trim at Commit (Tx.TrimReceipts, which is
// store.TrimOldest with the count) and compaction (CompactSnapshot,
// CompactResources) read it instead of walking a resource's receipts.
//
// Schema 2 (this one) added the binary values and the counts bucket. Open
// upgrades a schema-1 file in place, in its one write transaction: it
// creates the counts bucket by one pass over the receipts bucket and sets
// the schema to 2; values stay JSON until a write rewrites them. The
// upgrade is one-way: a binary of schema 1 refuses the file (its error
// names the schema version, "2"; ErrCorrupt) instead of failing on a
// binary value, so a sidecar rolled back to such a version does not start
// on its file (fail closed). Open refuses any other schema version, and a
// schema-2 file without its counts bucket (it is never rebuilt silently);
// any change of the stored shape of store types (the binary bytes, or the
// JSON of the values that stay JSON; golden tests pin both) must bump
// SchemaVersion.
// Within schema 1 the enforcement bucket was added (Open creates it in a
// file that lacks it, and older binaries ignore it).
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
// Compact is one Update: it plans in the read-only run, from each
// resource's receipt count, walking its receipts (their stamps only:
// codec.DecodeStamp) from its oldest key and stopping at the first one
// kept, and, at the first deletion, plans again and deletes in one durable
// write transaction of at most MaxDeletes deletions (receipts with their ops
// index entries and counts, quarantine entries). bbolt does not shrink the file: freed
// pages are reused by later writes, so with retention the file stays flat.
package bolt
