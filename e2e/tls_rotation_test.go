package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/tlsfiles/tlsfilestest"
)

// TestTLSRotationUnderARunningRegistry: a registry in mTLS mode whose
// files are a Kubernetes-style Secret volume keeps running while the
// volume's ..data symlink is swapped to a new serving certificate and a
// new client CA: it then serves the new certificate, accepts a client
// certificate of the new CA (the rotated client certificate, written in
// place over the client's files) and refuses one of the CA rotated out.
// No restart: the same process, the same port.
func TestTLSRotationUnderARunningRegistry(t *testing.T) {
	const owner = "spiffe://e2e.test/worker"
	srvCA := tlsfilestest.NewCA(t, "serving CA")
	ca1, ca2 := tlsfilestest.NewCA(t, "client CA 1"), tlsfilestest.NewCA(t, "client CA 2")
	s1, s2 := srvCA.Server(t, "127.0.0.1"), srvCA.Server(t, "127.0.0.1")
	c1, c2 := ca1.Client(t, owner), ca2.Client(t, owner)

	vol := tlsfilestest.NewSecretVolume(t, s1, ca1.PEM)
	rf := vol.Files()
	cfg := filepath.Join(t.TempDir(), "registry.yaml")
	writeFile(t, cfg, fmt.Sprintf("tls:\n  certFile: %s\n  keyFile: %s\n  clientCAFile: %s\nidentity:\n  mode: mtls\n", rf.Cert, rf.Key, rf.CA))
	p := start(t, "registry", "registry", "--config", cfg, "--data", t.TempDir(), "--listen", "127.0.0.1:0", "--log-level", "warn")
	addr := p.waitFor(listeningRE, 15*time.Second)
	url := "https://" + addr

	cf := tlsfilestest.WriteFiles(t, t.TempDir(), c1, srvCA.PEM)
	acquire := func(what string) error {
		t.Helper()
		c, err := client.New(url, client.WithTLSFiles(cf.Cert, cf.Key, cf.CA))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		l, err := c.Acquire(context.Background(), client.AcquireRequest{
			Resource: "tls/rotation", RequestID: fmt.Sprintf("tls-%d", requestSeq.Add(1)), TTL: time.Second,
		})
		if err == nil && l.Owner != owner {
			t.Fatalf("%s: the lease's owner is %q, want the certificate's %q", what, l.Owner, owner)
		}
		if err == nil {
			_, _ = c.Release(context.Background(), l.Lease)
		}
		return err
	}
	if err := acquire("before the rotation"); err != nil {
		t.Fatalf("before the rotation: %v", err)
	}
	if got := servedSerial(t, addr, srvCA.PEM); got != s1.Serial {
		t.Fatalf("before the rotation the registry served certificate %d, want %d", got, s1.Serial)
	}

	vol.Swap(t, s2, ca2.PEM) // the registry's Secret: new serving certificate, new client CA
	cf.Write(t, c2, nil)     // the client's certificate, rewritten in place
	deadline := time.Now().Add(30 * time.Second)
	for servedSerial(t, addr, srvCA.PEM) != s2.Serial {
		if time.Now().After(deadline) {
			t.Fatalf("the running registry still serves certificate %d after 30s, want %d", servedSerial(t, addr, srvCA.PEM), s2.Serial)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := acquire("with the rotated client certificate"); err != nil {
		t.Fatalf("the rotated registry refused the rotated client certificate: %v", err)
	}
	cf.Write(t, c1, nil)
	if err := acquire("with the certificate of the CA rotated out"); err == nil {
		t.Fatal("the rotated registry accepted a client certificate of the CA rotated out")
	}
	if p.cmd.ProcessState != nil {
		t.Fatal("the registry exited")
	}
	if strings.Contains(p.Stderr(), "keeping the last good material") {
		t.Fatalf("a good rotation was reported as failed:\n%s", p.Stderr())
	}
}

// servedSerial handshakes with addr (trusting caPEM, without a client
// certificate) and returns the serial of the certificate it served. The
// certificate is read when the client verifies it, before the registry
// can refuse the missing client certificate.
func servedSerial(t *testing.T, addr string, caPEM []byte) int64 {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	var serial int64
	tc := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12,
		VerifyConnection: func(cs tls.ConnectionState) error {
			serial = cs.PeerCertificates[0].SerialNumber.Int64()
			return nil
		}}
	c, err := tls.Dial("tcp", addr, tc)
	if c != nil {
		c.Close()
	}
	if serial == 0 {
		t.Fatalf("no certificate served by %s: %v", addr, err)
	}
	return serial
}
