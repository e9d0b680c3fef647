// Package tlsfiles builds TLS configurations from certificate files, the
// way the registry and the sidecar configure their listeners: a serving
// certificate and, optionally, a client CA that turns on mTLS.
package tlsfiles

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
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

// Config loads the files into a TLS 1.2+ server configuration.
func (s Server) Config() (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if s.ClientCAFile != "" {
		pool, err := Pool(s.ClientCAFile)
		if err != nil {
			return nil, err
		}
		tc.ClientCAs, tc.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return tc, nil
}

// Pool reads a PEM file of CA certificates.
func Pool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("tls: %s holds no certificate", path)
	}
	return pool, nil
}

// ConfigWith is Config with the client-certificate policy given: a listener
// that serves some routes without a client certificate (health, metrics,
// JWKS) asks for tls.VerifyClientCertIfGiven and checks the peer's
// certificate itself on every route that needs an identity. A certificate
// that is given is still verified against ClientCAFile.
func (s Server) ConfigWith(auth tls.ClientAuthType) (*tls.Config, error) {
	tc, err := s.Config()
	if err != nil {
		return nil, err
	}
	if s.ClientCAFile != "" {
		tc.ClientAuth = auth
	}
	return tc, nil
}
