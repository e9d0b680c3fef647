// Package tlsfiles builds TLS configurations from certificate files, the
// way the registry and the sidecar configure their listeners (Server: a
// serving certificate and, optionally, a client CA that turns on mTLS) and
// their clients (Client: the SDK's and the sidecar's connection to the
// registry, the connections to Redis).
//
// # Rotation
//
// Certificates rotate under a running process (cert-manager rewrites a
// Secret, SPIRE's helper rewrites its files), so a configuration never
// holds its material for good: every handshake asks for the current one.
// A server configuration answers GetConfigForClient with a copy of itself
// carrying the current certificate and client CA pool (the client-auth
// policy the configuration was made with, or was set to afterwards,
// applies to that copy, so to every handshake); a client configuration
// answers GetClientCertificate with the current certificate and, when a CA
// file is named, verifies the server itself in VerifyConnection against
// the current pool: the whole chain, the server name (Client.ServerName,
// else the name sent in SNI; none is a refusal) and the server-auth usage.
// Its InsecureSkipVerify is set only for that: the standard verification
// cannot take a pool that changes.
//
// The files are checked at handshake time, at most once per
// Reload.Interval (DefaultInterval), by their identity as os.Stat reports
// it: modification time, size, device and inode. A rewrite in place
// changes the time and usually the size; a Kubernetes Secret volume swaps
// its ..data symlink, which stat follows to new files (a new inode). No
// goroutine watches the files, so there is nothing to stop.
//
// A changed file set that does not load (a half-written rotation, a
// certificate that does not match its key, a CA file with no certificate,
// files that vanished) leaves the last good material in use: the process
// keeps serving with credentials that are still valid. The failure is
// reported once per file state through Reload.OnError (slog's default
// logger when nil), wrapped in ErrReload, and the load is tried again at
// every later check until it succeeds. At start, a file set that does not
// load is an error, as before.
//
// What rotation does not do: a connection already established keeps the
// certificates of its handshake (HTTP keep-alive connections included),
// and a rewrite that keeps a file's size, time, device and inode is not
// seen. A server with a client CA disables session tickets, so that no
// resumed session skips the verification against the current pool.
package tlsfiles
