package tlsfiles_test

import (
	"crypto/tls"
	"net"
	"net/http"
	"strconv"
	"testing"

	"github.com/fencegate/fencegate/tlsfiles"
)

// TestHTTPServerKeepsHTTP2AndRotates: behind net/http (which adds its ALPN
// protocols to the Config it is given) a reloading configuration still
// negotiates HTTP/2, and an http.Transport built on a reloading client
// configuration sees the server's rotated certificate on a new connection
// and presents its own rotated one.
func TestHTTPServerKeepsHTTP2AndRotates(t *testing.T) {
	ca := newCA(t, "ca")
	s1, s2 := ca.server(t, "127.0.0.1"), ca.server(t, "127.0.0.1")
	c1, c2 := ca.client(t), ca.client(t)
	sf := writeFiles(t, t.TempDir(), s1, ca.PEM)
	sr := newReload()
	stc, err := tlsfiles.Server{CertFile: sf.Cert, KeyFile: sf.Key, ClientCAFile: sf.CA}.Reloading(tls.RequireAndVerifyClientCert, sr.settings())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{TLSConfig: stc, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Client-Serial", r.TLS.PeerCertificates[0].SerialNumber.String())
	})}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { srv.Close() })

	v := newSecretVolume(t, c1, ca.PEM)
	cf := v.Files()
	cr := newReload()
	ctc, err := tlsfiles.Client{CertFile: cf.Cert, KeyFile: cf.Key, CAFile: cf.CA, ServerName: "127.0.0.1"}.Reloading(cr.settings())
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{TLSClientConfig: ctc, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr}
	get := func(what string, server, client leaf) {
		t.Helper()
		tr.CloseIdleConnections() // a new connection: a new handshake
		resp, err := hc.Get("https://" + ln.Addr().String() + "/")
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		resp.Body.Close()
		if resp.ProtoMajor != 2 {
			t.Fatalf("%s: %s, want HTTP/2", what, resp.Proto)
		}
		if got := resp.TLS.PeerCertificates[0].SerialNumber.Int64(); got != server.Serial {
			t.Fatalf("%s: server certificate %d, want %d", what, got, server.Serial)
		}
		if got, want := resp.Header.Get("X-Client-Serial"), strconv.FormatInt(client.Serial, 10); got != want {
			t.Fatalf("%s: the server saw client certificate %s, want %s", what, got, want)
		}
	}
	get("at start", s1, c1)
	sf.Write(t, s2, nil)
	sr.tick()
	v.Swap(t, c2, ca.PEM)
	cr.tick()
	get("after both rotated", s2, c2)
}
