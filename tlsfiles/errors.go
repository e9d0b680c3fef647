package tlsfiles

import "errors"

var (
	// ErrNoCertificate is returned when a CA file holds no PEM certificate.
	ErrNoCertificate = errors.New("tlsfiles: the file holds no certificate")
	// ErrNoServerName is returned by a client handshake that verifies the
	// server against a CA file but has no name to verify it for (no
	// Client.ServerName and no SNI: an IP address needs ServerName).
	ErrNoServerName = errors.New("tlsfiles: no server name to verify the server's certificate for")
	// ErrNoPeerCertificate is returned by a client handshake whose server
	// sent no certificate.
	ErrNoPeerCertificate = errors.New("tlsfiles: the server sent no certificate")
	// ErrReload wraps, in what Reload.OnError receives, the reason changed
	// files did not load; the last good material stays in use.
	ErrReload = errors.New("tlsfiles: changed files did not load; keeping the last good material")
	// ErrFiles is returned for a file set that cannot make a configuration
	// (a certificate without its key, a server without a certificate).
	ErrFiles = errors.New("tlsfiles: incomplete file set")
)
