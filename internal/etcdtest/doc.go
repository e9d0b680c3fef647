// Package etcdtest runs real etcd clusters for tests: one or three members,
// each its own process of the small server in etcdtest/etcdserver (built on
// go.etcd.io/etcd/server/v3/embed at the version of go.etcd.io/etcd/client/v3
// in go.mod), on free loopback ports, with data directories in the test's
// temporary directory, killed by PID when the test ends.
//
// The server binary is built once per test binary run (Binary), into a
// shared directory under os.TempDir (written to a temporary name and
// renamed, so test binaries of several packages building at once never
// run a half-written file); $ETCDTEST_SERVER names a prebuilt one instead.
//
// etcd cannot listen on port 0 for its peer URLs (every member must know
// every other member's URL before it starts), so Start picks free ports by
// listening on 127.0.0.1:0 and closing the listener, and starts the whole
// cluster again on new ports when a member finds its port taken.
//
// Members can be killed (SIGKILL), stopped (SIGTERM) and started again on
// the same ports and data directory, for fault tests. StartPartitionable
// (partition.go) starts a cluster whose peer traffic passes a gate in
// front of each member, so Partition can cut a member off from its peers
// while its clients still reach it.
package etcdtest
