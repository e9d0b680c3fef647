// Command worker is the stalled worker of the e2e fault matrix
// (e2e/paused_worker_test.go): a separate process that acquires a lease
// through the SDK, prints what it holds, and then, for every line
// "SEGMENT BODY" read from stdin, sends a PUT to the sidecar with the grant
// and proof it acquired at start, however old they are by then. It is the
// worker whose in-memory "locked = true" went stale while it was paused
// (SIGSTOP): it does not ask the registry again, on purpose, so that only
// the sidecar stands between its write and the data.
//
// Output, one line each: "held fence=N lease=ID" and "grant=JWS" after the acquire, then
// "result seg=S body=B status=N code=CODE" per write (code "-" when the answer is
// not a problem). It exits 0 at the end of stdin, 1 when the acquire fails.
package main
