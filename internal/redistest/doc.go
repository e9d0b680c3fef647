// Package redistest starts a private redis-server for tests. Each Server
// runs its own redis-server process on a free loopback port with its own
// working directory (a t.TempDir), so a test never touches a stranger's
// data, and is killed when the test ends.
//
// Redis cannot listen on port 0, so Start picks a free port by listening on
// 127.0.0.1:0 and closing the listener, then starts redis-server on it; if
// another process took the port in between, it tries again with a new one.
//
// The server starts as the registry and the sidecar's store require it
// (--appendonly yes --appendfsync always, no RDB: --save ""), so they open
// it without AllowNonDurable; extra arguments are appended and win, e.g.
//
//	redistest.Start(t, "--appendonly", "no")
//
// for a test of a server that keeps nothing (which then opens it with
// AllowNonDurable, as an operator would have to).
package redistest
