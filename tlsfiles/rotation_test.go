package tlsfiles_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/fencegate/fencegate/clock/clocktest"
	"github.com/fencegate/fencegate/tlsfiles"
)

const name = "fencegate.test"

// reload is a Reload on a test clock that collects reported errors.
type reload struct {
	clk  *clocktest.Clock
	mu   sync.Mutex
	errs []error
}

func newReload() *reload { return &reload{clk: clocktest.New(time.Time{})} }

func (r *reload) settings() tlsfiles.Reload {
	return tlsfiles.Reload{Interval: time.Second, Clock: r.clk, OnError: func(err error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.errs = append(r.errs, err)
	}}
}

func (r *reload) reported() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]error(nil), r.errs...)
}

// tick lets the next handshake check the files.
func (r *reload) tick() { r.clk.Advance(time.Second) }

func wantServed(t *testing.T, what, addr string, tc *tls.Config, serial int64) {
	t.Helper()
	got, err := dial(addr, tc)
	if err != nil {
		t.Fatalf("%s: handshake failed: %v", what, err)
	}
	if got != serial {
		t.Fatalf("%s: the server presented certificate %d, want %d", what, got, serial)
	}
}

func wantRefused(t *testing.T, what, addr string, tc *tls.Config) {
	t.Helper()
	if got, err := dial(addr, tc); err == nil {
		t.Fatalf("%s: the handshake succeeded (server certificate %d), want a refusal", what, got)
	}
}

func TestServerCertificateRotatesInPlace(t *testing.T) {
	ca := newCA(t, "ca")
	a, b := ca.server(t, name), ca.server(t, name)
	f := writeFiles(t, t.TempDir(), a, ca.PEM)
	r := newReload()
	tc, err := tlsfiles.Server{CertFile: f.Cert, KeyFile: f.Key}.Reloading(tls.RequireAndVerifyClientCert, r.settings())
	if err != nil {
		t.Fatal(err)
	}
	s := serve(t, tc)
	client := trusting(t, name, ca.PEM)
	wantServed(t, "before the rotation", s.addr, client, a.Serial)

	f.Write(t, b, nil)
	wantServed(t, "within the interval", s.addr, client, a.Serial)
	r.tick()
	wantServed(t, "after the rotation", s.addr, client, b.Serial)
	wantServed(t, "again", s.addr, client, b.Serial)
	if errs := r.reported(); len(errs) != 0 {
		t.Fatalf("a good rotation reported %v", errs)
	}
}

func TestServerCertificateRotatesBySymlinkSwap(t *testing.T) {
	ca := newCA(t, "ca")
	a, b, c := ca.server(t, name), ca.server(t, name), ca.server(t, name)
	v := newSecretVolume(t, a, ca.PEM)
	f := v.Files()
	r := newReload()
	tc, err := tlsfiles.Server{CertFile: f.Cert, KeyFile: f.Key}.Reloading(tls.NoClientCert, r.settings())
	if err != nil {
		t.Fatal(err)
	}
	s := serve(t, tc)
	client := trusting(t, name, ca.PEM)
	wantServed(t, "before the swap", s.addr, client, a.Serial)
	for _, l := range []leaf{b, c} {
		v.Swap(t, l, ca.PEM)
		r.tick()
		wantServed(t, "after a swap", s.addr, client, l.Serial)
	}
}

func TestServerSeesRotatedClientCertificate(t *testing.T) {
	ca := newCA(t, "ca")
	srv := writeFiles(t, t.TempDir(), ca.server(t, "127.0.0.1"), ca.PEM)
	stc, err := tlsfiles.Server{CertFile: srv.Cert, KeyFile: srv.Key, ClientCAFile: srv.CA}.Config()
	if err != nil {
		t.Fatal(err)
	}
	s := serve(t, stc)

	c1, c2 := ca.client(t), ca.client(t)
	v := newSecretVolume(t, c1, ca.PEM)
	f := v.Files()
	r := newReload()
	ctc, err := tlsfiles.Client{CertFile: f.Cert, KeyFile: f.Key, CAFile: f.CA, ServerName: "127.0.0.1"}.Reloading(r.settings())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dial(s.addr, ctc); err != nil {
		t.Fatal(err)
	}
	if got := <-s.clients; got != c1.Serial {
		t.Fatalf("the server saw client certificate %d, want %d", got, c1.Serial)
	}
	v.Swap(t, c2, ca.PEM)
	r.tick()
	if _, err := dial(s.addr, ctc); err != nil {
		t.Fatal(err)
	}
	if got := <-s.clients; got != c2.Serial {
		t.Fatalf("after the rotation the server saw client certificate %d, want %d", got, c2.Serial)
	}
}

// TestServerClientCARotation: once the client CA file names the new CA, a
// client of the old CA is refused and one of the new CA accepted, for
// every client-auth policy that verifies a given certificate.
func TestServerClientCARotation(t *testing.T) {
	for _, auth := range []tls.ClientAuthType{tls.RequireAndVerifyClientCert, tls.VerifyClientCertIfGiven} {
		t.Run(auth.String(), func(t *testing.T) {
			oldCA, newCA := newCA(t, "old"), newCA(t, "new")
			f := writeFiles(t, t.TempDir(), oldCA.server(t, name), oldCA.PEM)
			r := newReload()
			tc, err := tlsfiles.Server{CertFile: f.Cert, KeyFile: f.Key, ClientCAFile: f.CA}.Reloading(auth, r.settings())
			if err != nil {
				t.Fatal(err)
			}
			if tc.ClientAuth != auth {
				t.Fatalf("ClientAuth %v, want %v", tc.ClientAuth, auth)
			}
			s := serve(t, tc)
			base := trusting(t, name, oldCA.PEM)
			oldClient, newClient := withCert(t, base, oldCA.client(t)), withCert(t, base, newCA.client(t))
			if _, err := dial(s.addr, oldClient); err != nil {
				t.Fatalf("a client of the trusted CA: %v", err)
			}
			wantRefused(t, "a client of a CA not trusted yet", s.addr, newClient)

			f.Write(t, leaf{}, newCA.PEM)
			r.tick()
			wantRefused(t, "a client of the CA rotated out", s.addr, oldClient)
			if _, err := dial(s.addr, newClient); err != nil {
				t.Fatalf("a client of the rotated-in CA: %v", err)
			}
			noCert := base
			_, err = dial(s.addr, noCert)
			if auth == tls.RequireAndVerifyClientCert && err == nil {
				t.Fatal("a client without a certificate was accepted with RequireAndVerifyClientCert")
			}
			if auth == tls.VerifyClientCertIfGiven && err != nil {
				t.Fatalf("a client without a certificate was refused with VerifyClientCertIfGiven: %v", err)
			}
		})
	}
}

// TestClientAuthSetAfterwardsApplies: a ClientAuth set on the returned
// configuration (as the previous ConfigWith did) applies to the copies
// every handshake uses.
func TestClientAuthSetAfterwardsApplies(t *testing.T) {
	ca := newCA(t, "ca")
	f := writeFiles(t, t.TempDir(), ca.server(t, name), ca.PEM)
	tc, err := tlsfiles.Server{CertFile: f.Cert, KeyFile: f.Key, ClientCAFile: f.CA}.Config()
	if err != nil {
		t.Fatal(err)
	}
	if tc.ClientAuth != tls.RequireAndVerifyClientCert {
		t.Fatalf("Config: ClientAuth %v", tc.ClientAuth)
	}
	tc.ClientAuth = tls.VerifyClientCertIfGiven
	s := serve(t, tc)
	if _, err := dial(s.addr, trusting(t, name, ca.PEM)); err != nil {
		t.Fatalf("no client certificate under VerifyClientCertIfGiven: %v", err)
	}
}

// TestClientCARotation: a client's CA file rotation makes a server of the
// old CA refused and one of the new CA accepted.
func TestClientCARotation(t *testing.T) {
	oldCA, newCA := newCA(t, "old"), newCA(t, "new")
	oldSrv := serveFiles(t, oldCA.server(t, name))
	newSrv := serveFiles(t, newCA.server(t, name))
	f := writeFiles(t, t.TempDir(), leaf{}, oldCA.PEM)
	r := newReload()
	tc, err := tlsfiles.Client{CAFile: f.CA, ServerName: name}.Reloading(r.settings())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dial(oldSrv.addr, tc); err != nil {
		t.Fatalf("a server of the trusted CA: %v", err)
	}
	wantRefused(t, "a server of a CA not trusted yet", newSrv.addr, tc)
	f.Write(t, leaf{}, newCA.PEM)
	r.tick()
	wantRefused(t, "a server of the CA rotated out", oldSrv.addr, tc)
	if _, err := dial(newSrv.addr, tc); err != nil {
		t.Fatalf("a server of the rotated-in CA: %v", err)
	}
}

// serveFiles serves l (no client CA) from files.
func serveFiles(t *testing.T, l leaf) *tlsServer {
	t.Helper()
	f := writeFiles(t, t.TempDir(), l, nil)
	tc, err := tlsfiles.Server{CertFile: f.Cert, KeyFile: f.Key}.Config()
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, tc)
}

// TestClientVerifiesChainNameAndUsage: the client's own verification (it
// skips the standard one to take a pool that changes) refuses what the
// standard one refuses.
func TestClientVerifiesChainNameAndUsage(t *testing.T) {
	ca, other := newCA(t, "ca"), newCA(t, "other")
	f := writeFiles(t, t.TempDir(), leaf{}, ca.PEM)
	tc, err := tlsfiles.Client{CAFile: f.CA, ServerName: name}.Config()
	if err != nil {
		t.Fatal(err)
	}
	good := serveFiles(t, ca.server(t, name))
	if _, err := dial(good.addr, tc); err != nil {
		t.Fatalf("the right CA and name: %v", err)
	}
	wantRefused(t, "a server of another CA", serveFiles(t, other.server(t, name)).addr, tc)
	wantRefused(t, "a server certificate for another name", serveFiles(t, ca.server(t, "other.test")).addr, tc)
	wantRefused(t, "a certificate for client authentication only", serveFiles(t, ca.Issue(t, x509.ExtKeyUsageClientAuth, name)).addr, tc)
	wantRefused(t, "a self-signed certificate", serveFiles(t, selfSigned(t)).addr, tc)

	ip := serveFiles(t, ca.server(t, "127.0.0.1"))
	noName, err := tlsfiles.Client{CAFile: f.CA}.Config()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dial(ip.addr, noName); !errors.Is(err, tlsfiles.ErrNoServerName) {
		t.Fatalf("an IP address without ServerName: %v, want ErrNoServerName", err)
	}
	byIP, err := tlsfiles.Client{CAFile: f.CA, ServerName: "127.0.0.1"}.Config()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dial(ip.addr, byIP); err != nil {
		t.Fatalf("an IP SAN with ServerName set to it: %v", err)
	}
	c2, err := tlsfiles.Client{CAFile: f.CA}.Config()
	if err != nil {
		t.Fatal(err)
	}
	c2.ServerName = name // as tls.Dial and net/http set it from the host dialed
	if _, err := dial(good.addr, c2); err != nil {
		t.Fatalf("the name from SNI: %v", err)
	}
	c2.ServerName = "other.test"
	wantRefused(t, "the SNI name is not the certificate's", good.addr, c2)
}

// selfSigned is a server certificate for name signed by its own key.
func selfSigned(t *testing.T) leaf {
	self := newCA(t, name)
	return self.server(t, name) // issued by a CA nobody trusts
}

func TestGarbageKeepsLastGoodMaterial(t *testing.T) {
	ca := newCA(t, "ca")
	a, b, c := ca.server(t, name), ca.server(t, name), ca.server(t, name)
	f := writeFiles(t, t.TempDir(), a, ca.PEM)
	r := newReload()
	tc, err := tlsfiles.Server{CertFile: f.Cert, KeyFile: f.Key, ClientCAFile: f.CA}.Reloading(tls.VerifyClientCertIfGiven, r.settings())
	if err != nil {
		t.Fatal(err)
	}
	s := serve(t, tc)
	client := withCert(t, trusting(t, name, ca.PEM), ca.client(t))
	wantServed(t, "at start", s.addr, client, a.Serial)

	steps := []struct {
		what   string
		change func()
	}{
		{"a garbage certificate", func() { writeInPlace(t, f.Cert, []byte("-----BEGIN CERTIFICATE-----\nnot base64")) }},
		{"a half-written certificate", func() { writeInPlace(t, f.Cert, b.CertPEM[:len(b.CertPEM)/2]) }},
		{"a certificate that does not match its key", func() { writeInPlace(t, f.Cert, b.CertPEM) }},
		{"an empty CA file", func() { writeInPlace(t, f.CA, nil) }},
		{"files that vanished", func() {
			for _, p := range []string{f.Cert, f.Key, f.CA} {
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
			}
		}},
	}
	for i, st := range steps {
		st.change()
		r.tick()
		wantServed(t, st.what, s.addr, client, a.Serial)
		r.tick()
		wantServed(t, st.what+", checked again", s.addr, client, a.Serial)
		errs := r.reported()
		if len(errs) != i+1 {
			t.Fatalf("%s: %d errors reported, want %d (one per file state): %v", st.what, len(errs), i+1, errs)
		}
		if !errors.Is(errs[i], tlsfiles.ErrReload) {
			t.Fatalf("%s: reported %v, want ErrReload", st.what, errs[i])
		}
	}
	f.Write(t, c, ca.PEM)
	r.tick()
	wantServed(t, "after a good rotation", s.addr, client, c.Serial)
}

func TestStartFailsOnBadFiles(t *testing.T) {
	ca := newCA(t, "ca")
	dir := t.TempDir()
	f := writeFiles(t, dir, ca.server(t, name), ca.PEM)
	garbage := writeFiles(t, t.TempDir(), leaf{CertPEM: []byte("x"), KeyPEM: []byte("y")}, []byte("z"))
	for what, s := range map[string]tlsfiles.Server{
		"no files":               {},
		"a missing certificate":  {CertFile: dir + "/none", KeyFile: f.Key},
		"a garbage certificate":  {CertFile: garbage.Cert, KeyFile: garbage.Key},
		"a garbage client CA":    {CertFile: f.Cert, KeyFile: f.Key, ClientCAFile: garbage.CA},
		"a missing client CA":    {CertFile: f.Cert, KeyFile: f.Key, ClientCAFile: dir + "/none"},
		"a key without its cert": {KeyFile: f.Key},
	} {
		if _, err := s.Config(); err == nil {
			t.Errorf("server, %s: no error", what)
		}
	}
	for what, c := range map[string]tlsfiles.Client{
		"a garbage CA":           {CAFile: garbage.CA},
		"a garbage certificate":  {CertFile: garbage.Cert, KeyFile: garbage.Key},
		"a cert without its key": {CertFile: f.Cert},
		"a missing CA":           {CAFile: dir + "/none"},
	} {
		if _, err := c.Config(); err == nil {
			t.Errorf("client, %s: no error", what)
		}
	}
	if _, err := tlsfiles.Pool(garbage.CA); !errors.Is(err, tlsfiles.ErrNoCertificate) {
		t.Errorf("Pool of garbage: %v, want ErrNoCertificate", err)
	}
}

// TestResumedSessionsMeetTheCurrentCA: a session resumed from before a CA
// rotation (the client keeps a session cache) is refused like a new one,
// on both sides.
func TestResumedSessionsMeetTheCurrentCA(t *testing.T) {
	oldCA, newCA := newCA(t, "old"), newCA(t, "new")

	t.Run("server", func(t *testing.T) {
		f := writeFiles(t, t.TempDir(), oldCA.server(t, name), oldCA.PEM)
		r := newReload()
		tc, err := tlsfiles.Server{CertFile: f.Cert, KeyFile: f.Key, ClientCAFile: f.CA}.Reloading(tls.RequireAndVerifyClientCert, r.settings())
		if err != nil {
			t.Fatal(err)
		}
		s := serve(t, tc)
		client := withCert(t, trusting(t, name, oldCA.PEM), oldCA.client(t))
		client.ClientSessionCache = tls.NewLRUClientSessionCache(4)
		if _, err := dial(s.addr, client); err != nil {
			t.Fatal(err)
		}
		f.Write(t, leaf{}, newCA.PEM)
		r.tick()
		wantRefused(t, "a session of a client of the CA rotated out", s.addr, client)
	})

	t.Run("client", func(t *testing.T) {
		srv := serveFiles(t, oldCA.server(t, name))
		f := writeFiles(t, t.TempDir(), leaf{}, oldCA.PEM)
		r := newReload()
		tc, err := tlsfiles.Client{CAFile: f.CA, ServerName: name}.Reloading(r.settings())
		if err != nil {
			t.Fatal(err)
		}
		tc.ClientSessionCache = tls.NewLRUClientSessionCache(4)
		if _, err := dial(srv.addr, tc); err != nil {
			t.Fatal(err)
		}
		var resumed bool
		probe := tc.Clone()
		verify := probe.VerifyConnection
		probe.VerifyConnection = func(cs tls.ConnectionState) error { resumed = cs.DidResume; return verify(cs) }
		if _, err := dial(srv.addr, probe); err != nil || !resumed {
			t.Fatalf("the second connection did not resume (%v): the test proves nothing", err)
		}
		f.Write(t, leaf{}, newCA.PEM)
		r.tick()
		wantRefused(t, "a resumed session with a server of the CA rotated out", srv.addr, tc)
	})
}
