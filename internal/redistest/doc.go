// Package redistest starts a private redis-server for tests. Each Server
// runs its own redis-server process on a free loopback port with its own
// working directory (a t.TempDir), so a test never touches a stranger's
// data, and is killed when the test ends.
//
// Redis cannot listen on port 0, so Start picks a free port by listening on
// 127.0.0.1:0 and closing the listener, then starts redis-server on it; if
// another process took the port in between, it tries again with a new one.
//
// The server starts with persistence off (--save "" --appendonly no);
// extra arguments are appended and win, e.g.
//
//	redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
//
// for a test that kills the server and expects its data after Restart.
package redistest
