// Package e2e holds fencegate's end-to-end scenarios. Each scenario (one
// per file) runs the real fencegate binary as separate processes through
// the shared harness in harness_test.go: the binary is built once per test
// run, every process gets its own temp directory and a free loopback port,
// and is killed when its test ends.
//
// The fault matrix (issue 11) runs on matrix_harness_test.go: a registry,
// a sidecar in front of the recording legacy backend of
// ledger_backend_test.go (faultproxy in between where a scenario needs
// it), raw writes that carry whatever a possibly stale worker holds, the
// problem-code assertions, and checkFinalData, which every scenario ends
// with: the backend's applied writes are exactly the accepted receipts, in
// (fence, segment) order, each once, with nothing left in flight or
// unknown. The stalled worker of paused_worker_test.go is a separate
// process, e2e/internal/worker, built once when first needed.
package e2e
