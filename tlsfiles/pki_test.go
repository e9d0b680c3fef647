package tlsfiles_test

import (
	"crypto/tls"
	"crypto/x509"
	"testing"

	"github.com/fencegate/fencegate/tlsfiles/tlsfilestest"
)

type leaf = tlsfilestest.Leaf

var (
	writeFiles   = tlsfilestest.WriteFiles
	writeInPlace = tlsfilestest.WriteInPlace
)

// ca adds the spellings of the tests to tlsfilestest.CA.
type ca struct{ *tlsfilestest.CA }

func newCA(t *testing.T, name string) ca { return ca{tlsfilestest.NewCA(t, name)} }

func (c ca) client(t *testing.T) leaf { return c.Client(t, "spiffe://test/worker") }

func (c ca) server(t *testing.T, names ...string) leaf { return c.Server(t, names...) }

func newSecretVolume(t *testing.T, l leaf, caPEM []byte) *tlsfilestest.SecretVolume {
	return tlsfilestest.NewSecretVolume(t, l, caPEM)
}

// tlsServer is a TLS listener on loopback that completes handshakes,
// answers "ok" and records the serial of each verified client certificate.
type tlsServer struct {
	addr    string
	clients chan int64 // the client certificate's serial, 0 for none
}

func serve(t *testing.T, tc *tls.Config) *tlsServer {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", tc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s := &tlsServer{addr: ln.Addr().String(), clients: make(chan int64, 100)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				tc := c.(*tls.Conn)
				if err := tc.Handshake(); err != nil {
					return
				}
				var n int64
				if pc := tc.ConnectionState().PeerCertificates; len(pc) > 0 {
					n = pc[0].SerialNumber.Int64()
				}
				s.clients <- n
				_, _ = c.Write([]byte("ok"))
			}()
		}
	}()
	return s
}

// dial handshakes with the server, reads its "ok" (in TLS 1.3 a client
// learns that the server refused its certificate only then) and returns
// the serial of the server's certificate.
func dial(addr string, tc *tls.Config) (int64, error) {
	c, err := tls.Dial("tcp", addr, tc)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	buf := make([]byte, 2)
	if _, err := c.Read(buf); err != nil {
		return 0, err
	}
	return c.ConnectionState().PeerCertificates[0].SerialNumber.Int64(), nil
}

// trusting is a plain client configuration trusting pemCAs.
func trusting(t *testing.T, serverName string, pemCAs ...[]byte) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	for _, p := range pemCAs {
		if !pool.AppendCertsFromPEM(p) {
			t.Fatal("bad CA PEM")
		}
	}
	return &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12}
}

// withCert adds a client certificate to tc, sent whatever CAs the server
// names as acceptable (with Certificates, a Go client sends none that
// does not match them).
func withCert(t *testing.T, tc *tls.Config, l leaf) *tls.Config {
	t.Helper()
	cert, err := tls.X509KeyPair(l.CertPEM, l.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	tc = tc.Clone()
	tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	return tc
}
