package tlsfiles

import (
	"crypto/tls"
	"fmt"
)

// Server names the files of a TLS listener. ClientCAFile, when set,
// requires and verifies client certificates (mTLS).
type Server struct {
	CertFile     string `yaml:"certFile"`
	KeyFile      string `yaml:"keyFile"`
	ClientCAFile string `yaml:"clientCAFile"`
}

// Enabled reports whether a certificate is configured.
func (s Server) Enabled() bool { return s.CertFile != "" }

// Validate reports the problems of the file set (prefix names the config key).
func (s Server) Validate(prefix string) []error {
	var errs []error
	if (s.CertFile == "") != (s.KeyFile == "") {
		errs = append(errs, fmt.Errorf("%s: certFile and keyFile go together", prefix))
	}
	if s.ClientCAFile != "" && s.CertFile == "" {
		errs = append(errs, fmt.Errorf("%s.clientCAFile: mTLS needs certFile and keyFile", prefix))
	}
	return errs
}

// Config loads the files into a TLS 1.2+ server configuration that
// requires and verifies a client certificate when ClientCAFile is set. It
// re-reads the files when they change (see the package documentation),
// with the default Reload.
func (s Server) Config() (*tls.Config, error) {
	return s.Reloading(tls.RequireAndVerifyClientCert, Reload{})
}

// ConfigWith is Config with the client-certificate policy given: a listener
// that serves some routes without a client certificate (health, metrics,
// JWKS) asks for tls.VerifyClientCertIfGiven and checks the peer's
// certificate itself on every route that needs an identity. A certificate
// that is given is still verified against ClientCAFile.
func (s Server) ConfigWith(auth tls.ClientAuthType) (*tls.Config, error) {
	return s.Reloading(auth, Reload{})
}

// Reloading is ConfigWith with the reload settings given. The files are
// loaded now (an error if they do not load) and checked again at
// handshake time: each handshake is served by a copy of the returned
// configuration (its ClientAuth, NextProtos, ... as they are then) with
// the current certificate and client CA pool. With ClientCAFile set,
// ClientAuth is auth and session tickets are disabled: a resumed session
// would skip the verification against the current pool.
func (s Server) Reloading(auth tls.ClientAuthType, r Reload) (*tls.Config, error) {
	if s.CertFile == "" || s.KeyFile == "" {
		return nil, fmt.Errorf("%w: a server needs certFile and keyFile", ErrFiles)
	}
	rl, err := newReloader(fileSet{cert: s.CertFile, key: s.KeyFile, ca: s.ClientCAFile}, r)
	if err != nil {
		return nil, err
	}
	m := rl.cur.Load()
	tc := &tls.Config{Certificates: []tls.Certificate{*m.cert}, MinVersion: tls.VersionTLS12}
	if s.ClientCAFile != "" {
		tc.ClientCAs, tc.ClientAuth = m.pool, auth
		tc.SessionTicketsDisabled = true
	}
	// tc, not a copy: net/http adds its ALPN protocols to the Config it is
	// given before cloning it, and a caller may set ClientAuth afterwards.
	tc.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		m := rl.get()
		c := tc.Clone()
		c.GetConfigForClient = nil
		c.Certificates = []tls.Certificate{*m.cert}
		if m.pool != nil {
			c.ClientCAs = m.pool
		}
		return c, nil
	}
	return tc, nil
}
