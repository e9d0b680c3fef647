// Package e2e holds fencegate's end-to-end scenarios. Each scenario (one
// per file) runs the real fencegate binary as separate processes through
// the shared harness in harness_test.go: the binary is built once per test
// run, every process gets its own temp directory and a free loopback port,
// and is killed when its test ends.
package e2e
