// Package guard wraps any store.Store with local per-resource checkpoints,
// so that a store that lost data (a shared Redis restarted empty, restored
// from an old RDB/AOF, or failed over to a lagging replica) never makes a
// sidecar accept a fence below one it saw accepted, nor forget an UNKNOWN
// outcome it saw declared.
//
// # What is kept
//
// For each resource the sidecar touched, a Checkpoint: the highest fence
// and last segment it saw the store accept (after every Begin that
// PROCEEDs, every Commit, Resolve and Abort), the mutation it saw declared
// UNKNOWN and not yet settled (MarkUnknown, or a Begin that found its
// deadline passed), and whether it saw the resource paused. The cost is
// one durable checkpoint write per change (the Begin of a new fence, a
// Commit, an UNKNOWN, a settlement) and one record read before the Begin
// of a checkpointed resource.
//
// # The file
//
// The checkpoints live in a bbolt file, one key per resource (see db.go
// for the buckets). A change is written before the call returns, in a
// durable bbolt transaction (NoSync off: on disk when it returns): there
// is no batching window, a Begin that returned PROCEED is checkpointed,
// and so is an UNKNOWN declared. Concurrent changes, typically of
// different resources, share a transaction and its fsyncs: one committer
// goroutine takes every change waiting when the previous transaction ends,
// without a timer (the design of store/bolt's GroupCommit; bbolt's
// DB.Batch would add its MaxBatchDelay to every lone write). A call that
// changes no checkpoint (the next segment's Begin under the same fence)
// writes nothing. The freelist is not synced (NoFreelistSync): bbolt
// rebuilds it at open, and a checkpoint file is small.
//
// The file is bounded (Options.MaxEntries, DefaultMaxEntries): past it
// the least recently used resource is dropped (an index by last use makes
// that one deletion, not a scan), and a resource without a checkpoint is
// only as safe as the inner store. Guards of one process that name the
// same file share one handle (bbolt locks the file: another process on
// it waits, then fails to start). A checkpoint that cannot be read fails
// the Begin; a file of another format or schema fails Wrap.
//
// Earlier versions kept a JSON file rewritten whole (temporary file,
// fsync, rename, directory fsync) on every change, serially.
// Options.ImportJSON imports such a file once at Wrap: merged into the
// bbolt file in one durable transaction, never lowering a checkpoint that
// is already there, then renamed with ImportedSuffix; a crash between the
// two imports it again, harmlessly.
//
// # The check
//
// Before the inner Begin of a checkpointed resource, the guard reads its
// record. It means the store lost data when it shows no record, a highest
// fence below the checkpoint's, a lower last segment under the same fence,
// or no trace of an outstanding UNKNOWN mutation (neither the mutation
// itself, in flight or unknown, nor a commit of it or a higher fence).
// The attempt is then refused with DecisionFenceRegression and the
// resource paused in the store (store.PauseFenceRegression, with a detail
// naming the checkpoint), whatever the attempt's fence: the guard never
// lets a decision be made on lost state, and it writes no fence itself.
// Calls of one resource through one guard are serialised, so a checkpoint
// never lags a concurrent call of the same sidecar.
//
// An operator's resume is the acknowledgement: Resume through the guard,
// or a Begin that finds a pause it had seen lifted, makes the checkpoint
// adopt the record as it now is. Until then every Begin is PAUSED.
//
// # Limits
//
// The check is only as fresh as this sidecar's view. With several
// replicas, a write another replica made and Redis lost is caught by that
// replica's checkpoint only. An UNKNOWN that another replica resolved as
// not applied looks exactly like a forgotten one (the record is the same),
// so this sidecar pauses the resource: fail closed, an operator resumes.
// The record read and the inner Begin are two steps, so a loss between
// them is caught at the next Begin. Folding the read into the inner
// store's Begin (one Redis round trip fewer) would need the check inside
// store/redis's transaction; the guard wraps any store and keeps the
// check strictly before the inner store decides, at the cost of that
// read.
package guard
