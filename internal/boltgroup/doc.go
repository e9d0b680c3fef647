// Package boltgroup is the group committer both bbolt files of fencegate
// use (the fenced store, store/bolt, and the registry's, registry/bolt):
// writes that wait at the same moment run in one transaction (up to a
// maximum), so they share its fsyncs. A call returns once its transaction
// is committed and on disk.
//
// The committer has no goroutine of its own: the callers take turns. A
// write arriving while no group is being committed leads at once: it
// takes itself and every write waiting with it into one transaction,
// commits it, answers them, and hands the lead to the oldest write that
// arrived meanwhile, which commits the next group. So New starts nothing
// and Close only waits for the group in progress.
//
// There is no timer, unlike bbolt's DB.Batch (MaxBatchDelay, 10 ms by
// default, would be added to every lone write): a write arriving while the
// disk is idle starts at once, and writes arriving during an fsync form the
// next group. Before it closes a group the leader lets the goroutines
// that are runnable now run, for as long as that brings more writes
// (gather): without it, on a process with fewer CPUs than runnable writers
// nearly every transaction held one write (see gather).
//
// DoStaged is Do for a write that leaves work to do (a Stage): its Work,
// pure computation, runs in the write's own goroutine, which waits for its
// group anyway, while the leader runs the functions after it; its Finish
// runs in the same transaction once every Work of the group has returned,
// before the commit. A failed Work or Finish fails the group like a failed
// function.
package boltgroup
