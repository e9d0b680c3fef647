// Package storetest is the conformance suite every fenced store backend must
// pass: Run(t, newStore) checks the decision table row by row, the
// commit/unknown/resolve/abort/pause lifecycle, bad input, in-flight
// exclusivity under racing goroutines, a rapid (pgregory.net/rapid) stateful
// test against a small independent reference model, a porcupine
// linearizability check of concurrent per-resource histories, the
// enforcement ledger, compaction (retention never lets a compacted segment
// be accepted again) with Stats, issuer lineages, Repair (a record raised
// to its outside anchor), Records, Generation and the trust pins. The
// stateful model knows lineages and Repair.
//
// Backend-specific properties (durability across a crash, fsync grouping)
// are tested in the backend's own package; BeginCommitLoop is the shared
// driver for their benchmarks, and RunReopen checks what a durable backend
// must keep across a reopen (the ledger, the pins, the generation,
// compaction). RunCrash (crash.go) is the crash-safety test every durable
// backend runs: a child process writing the store is killed with SIGKILL
// at random moments, and every commit it reported must have survived,
// with no record half-written; CrashChild is that child's work.
package storetest
