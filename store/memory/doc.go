// Package memory is the in-memory fenced store backend: for tests, the
// deterministic simulation and single-process demos. It is not durable.
//
// Every call runs under one mutex and decides through the pure functions of
// package store (store.Decide, store.DecideCommit, ...), so it behaves exactly
// like the durable backends. Values are deep-copied on the way in and out.
// Each store is its own data set: its generation is random per New unless
// Options.Generation names one (the simulation does, to replay exactly).
package memory
