package tlsfiles

import (
	"crypto/x509"
	"fmt"
	"os"
)

// Pool reads a PEM file of CA certificates.
func Pool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tlsfiles: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%w: %s", ErrNoCertificate, path)
	}
	return pool, nil
}
