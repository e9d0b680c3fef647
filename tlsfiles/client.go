package tlsfiles

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
)

// Client names the files of a TLS client: a client certificate (CertFile
// and KeyFile, for mTLS; both empty for none) and the CAs to trust
// (CAFile; empty for the system roots).
type Client struct {
	CertFile string
	KeyFile  string
	CAFile   string
	// ServerName is the name the server's certificate must hold; empty
	// uses the name sent in SNI (the host dialed, unless it is an IP
	// address: then set ServerName, or a handshake verifying against
	// CAFile fails with ErrNoServerName).
	ServerName string
}

// Validate reports the problems of the file set (prefix names the config key).
func (c Client) Validate(prefix string) []error {
	if (c.CertFile == "") != (c.KeyFile == "") {
		return []error{fmt.Errorf("%s: certFile and keyFile go together", prefix)}
	}
	return nil
}

// Config loads the files into a TLS 1.2+ client configuration that
// re-reads them when they change, with the default Reload.
func (c Client) Config() (*tls.Config, error) { return c.Reloading(Reload{}) }

// Reloading is Config with the reload settings given. The files are loaded
// now (an error if they do not load) and checked again at handshake time:
// the client certificate is the current one (GetClientCertificate), and
// with CAFile set the server's chain, name and usage are verified against
// the current pool (VerifyConnection; InsecureSkipVerify is set only
// because the standard verification cannot take a pool that changes).
// Without CAFile the server is verified against the system roots as usual.
func (c Client) Reloading(r Reload) (*tls.Config, error) {
	if errs := c.Validate("tls"); len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrFiles, errs[0])
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName}
	if c.CertFile == "" && c.CAFile == "" {
		return tc, nil
	}
	rl, err := newReloader(fileSet{cert: c.CertFile, key: c.KeyFile, ca: c.CAFile}, r)
	if err != nil {
		return nil, err
	}
	if c.CertFile != "" {
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return rl.get().cert, nil
		}
	}
	if c.CAFile != "" {
		tc.InsecureSkipVerify = true
		tc.VerifyConnection = func(cs tls.ConnectionState) error {
			return verifyServer(cs, c.ServerName, rl.get().pool)
		}
	}
	return tc, nil
}

// verifyServer does what the standard client verification does, against
// pool: the chain the server sent up to a root of pool, for server
// authentication, naming name (else the SNI name). It runs on resumed
// sessions too, so a session of a CA since removed is refused.
func verifyServer(cs tls.ConnectionState, name string, pool *x509.CertPool) error {
	if len(cs.PeerCertificates) == 0 {
		return ErrNoPeerCertificate
	}
	if name == "" {
		name = cs.ServerName
	}
	if name == "" {
		return ErrNoServerName
	}
	if pool == nil {
		return fmt.Errorf("%w: no CA pool", ErrNoCertificate)
	}
	opts := x509.VerifyOptions{
		Roots:         pool,
		DNSName:       name,
		Intermediates: x509.NewCertPool(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, ic := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(ic)
	}
	if _, err := cs.PeerCertificates[0].Verify(opts); err != nil {
		return fmt.Errorf("tlsfiles: the server's certificate: %w", err)
	}
	return nil
}
