package client_test

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate/client"
	"github.com/fencegate/fencegate/clock/clocktest"
	"github.com/fencegate/fencegate/tlsfiles"
	"github.com/fencegate/fencegate/tlsfiles/tlsfilestest"
)

// tlsRegistry is a registry stand-in over real TLS on loopback: it answers
// every request with an empty lease and sends the serial of each verified
// client certificate on clients. Keep-alives are off, so each call is a new
// handshake.
type tlsRegistry struct {
	url     string
	clients chan int64
}

func startTLSRegistry(t *testing.T, tc *tls.Config) *tlsRegistry {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &tlsRegistry{url: "https://" + ln.Addr().String(), clients: make(chan int64, 16)}
	srv := &http.Server{TLSConfig: tc, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0), Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.clients <- req.TLS.PeerCertificates[0].SerialNumber.Int64()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	})}
	srv.SetKeepAlivesEnabled(false)
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { srv.Close() })
	return r
}

// TestTLSFilesRotate: the SDK's TLS files are re-read when they change:
// a rotated client certificate is what the registry sees next; a rotated
// CA file refuses the registry of the old CA and accepts the one of the
// new; a registry whose certificate does not name the URL's host is
// refused.
func TestTLSFilesRotate(t *testing.T) {
	ctx := context.Background()
	ca1, ca2 := tlsfilestest.NewCA(t, "ca1"), tlsfilestest.NewCA(t, "ca2")
	const owner = "spiffe://test/worker"

	srvFiles := tlsfilestest.WriteFiles(t, t.TempDir(), ca1.Server(t, "127.0.0.1"), ca1.PEM)
	srvClock := clocktest.New(time.Time{})
	stc, err := tlsfiles.Server{CertFile: srvFiles.Cert, KeyFile: srvFiles.Key, ClientCAFile: srvFiles.CA}.
		Reloading(tls.RequireAndVerifyClientCert, tlsfiles.Reload{Clock: srvClock})
	if err != nil {
		t.Fatal(err)
	}
	reg := startTLSRegistry(t, stc)

	c1, c2, c3 := ca1.Client(t, owner), ca1.Client(t, owner), ca2.Client(t, owner)
	vol := tlsfilestest.NewSecretVolume(t, c1, ca1.PEM)
	f := vol.Files()
	clk := clocktest.New(time.Time{})
	var (
		mu       sync.Mutex
		reported []error
	)
	c, err := client.New(reg.url, client.WithTLS(tlsfiles.Client{CertFile: f.Cert, KeyFile: f.Key, CAFile: f.CA},
		tlsfiles.Reload{Clock: clk, OnError: func(err error) {
			mu.Lock()
			defer mu.Unlock()
			reported = append(reported, err)
		}}))
	if err != nil {
		t.Fatal(err)
	}
	call := func(what string, want int64) {
		t.Helper()
		if _, err := c.Lookup(ctx, "r1"); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := <-reg.clients; got != want {
			t.Fatalf("%s: the registry saw client certificate %d, want %d", what, got, want)
		}
	}
	call("at start", c1.Serial)

	vol.Swap(t, c2, ca1.PEM)
	clk.Advance(time.Second)
	call("after the client certificate rotated", c2.Serial)

	// The client now trusts ca2 only (and holds a ca2 certificate): the
	// registry, still on ca1, is refused.
	vol.Swap(t, c3, ca2.PEM)
	clk.Advance(time.Second)
	if _, err := c.Lookup(ctx, "r1"); err == nil {
		t.Fatal("a registry of the CA rotated out was accepted")
	}

	srvFiles.Write(t, ca2.Server(t, "127.0.0.1"), ca2.PEM)
	srvClock.Advance(time.Second)
	call("after both sides rotated to the new CA", c3.Serial)

	// A client still on ca1 is refused by the rotated registry.
	of := tlsfilestest.WriteFiles(t, t.TempDir(), c1, ca2.PEM)
	old, err := client.New(reg.url, client.WithTLSFiles(of.Cert, of.Key, of.CA))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Lookup(ctx, "r1"); err == nil {
		t.Fatal("the registry accepted a client certificate of the CA rotated out")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reported) != 0 {
		t.Fatalf("good rotations reported %v", reported)
	}
}

// TestTLSFilesVerifyTheURLHost: the server's certificate must name the
// registry URL's host.
func TestTLSFilesVerifyTheURLHost(t *testing.T) {
	ca := tlsfilestest.NewCA(t, "ca")
	cf := tlsfilestest.WriteFiles(t, t.TempDir(), ca.Client(t, "spiffe://test/w"), ca.PEM)
	for _, tc := range []struct {
		names []string
		ok    bool
	}{{[]string{"127.0.0.1"}, true}, {[]string{"other.test"}, false}} {
		sf := tlsfilestest.WriteFiles(t, t.TempDir(), ca.Server(t, tc.names...), ca.PEM)
		stc, err := tlsfiles.Server{CertFile: sf.Cert, KeyFile: sf.Key, ClientCAFile: sf.CA}.Config()
		if err != nil {
			t.Fatal(err)
		}
		reg := startTLSRegistry(t, stc)
		c, err := client.New(reg.url, client.WithTLSFiles(cf.Cert, cf.Key, cf.CA))
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Lookup(context.Background(), "r1")
		if tc.ok && err != nil {
			t.Fatalf("a certificate for %v: %v", tc.names, err)
		}
		if !tc.ok && err == nil {
			t.Fatalf("a certificate for %v was accepted for 127.0.0.1", tc.names)
		}
	}
}

func TestTLSFilesMustLoadAtStart(t *testing.T) {
	dir := t.TempDir()
	if _, err := client.New("https://127.0.0.1:1", client.WithTLSFiles(dir+"/none.crt", dir+"/none.key", "")); err == nil {
		t.Fatal("missing certificate files: no error")
	}
	tlsfilestest.WriteInPlace(t, dir+"/ca.crt", []byte("not a certificate"))
	if _, err := client.New("https://127.0.0.1:1", client.WithTLSFiles("", "", dir+"/ca.crt")); err == nil {
		t.Fatal("a CA file with no certificate: no error")
	}
}
