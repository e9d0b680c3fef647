// Package memory is the in-memory fenced store backend: for tests, the
// deterministic simulation and single-process demos. It is not durable.
//
// It is a store.TxStore over maps (memory.go, tx.go, compact.go): every
// transaction runs under one mutex, and the Store methods are those of
// store.NewTxBackend, which decide through the pure functions of package
// store (store.Decide, store.DecideCommit, ...), so it behaves exactly like
// the durable backends. Values are deep-copied on the way in and out;
// receipts, kept only to be replayed and listed, are stored as
// store/codec bytes (one pointer-free allocation each, which the garbage
// collector does not scan: a full retention of receipts costs the sidecar's
// collector little). Each
// store is its own data set: its generation is random per New unless
// Options.Generation names one (the simulation does, to replay exactly).
// Snapshot and Restore copy its whole state, for the simulation.
package memory
