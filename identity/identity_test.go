package identity_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/fencegate/fencegate/identity"
)

type ca struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newCA(t *testing.T) *ca {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &ca{cert, key, pool}
}

func (c *ca) issue(t *testing.T, uris ...string) tls.Certificate {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth}, DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	for _, u := range uris {
		pu, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.URIs = append(tmpl.URIs, pu)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestMTLS runs a real TLS server that requires client certificates and
// checks which SPIFFE IDs become identities.
func TestMTLS(t *testing.T) {
	authority := newCA(t)
	res, err := identity.New(identity.Config{Mode: identity.ModeMTLS, TrustDomain: "example.org"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := res.Identify(r)
		if err != nil {
			w.WriteHeader(401)
			io.WriteString(w, err.Error())
			return
		}
		io.WriteString(w, id)
	}))
	srv.TLS = &tls.Config{ClientCAs: authority.pool, ClientAuth: tls.VerifyClientCertIfGiven, Certificates: []tls.Certificate{authority.issue(t)}}
	srv.StartTLS()
	defer srv.Close()

	for _, tc := range []struct {
		name   string
		uris   []string
		status int
		want   string
	}{
		{"one SPIFFE ID", []string{"spiffe://example.org/ns/billing/sa/worker"}, 200, "spiffe://example.org/ns/billing/sa/worker"},
		{"other trust domain", []string{"spiffe://evil.org/ns/billing/sa/worker"}, 401, ""},
		{"two SPIFFE IDs", []string{"spiffe://example.org/a", "spiffe://example.org/b"}, 401, ""},
		{"no SPIFFE ID", []string{"https://example.org/a"}, 401, ""},
		{"no certificate", nil, 401, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc2 := &tls.Config{RootCAs: authority.pool}
			if tc.uris != nil {
				tc2.Certificates = []tls.Certificate{authority.issue(t, tc.uris...)}
			}
			c := &http.Client{Transport: &http.Transport{TLSClientConfig: tc2}}
			req, _ := http.NewRequest("GET", srv.URL, nil)
			req.Header.Set(identity.DefaultHeader, "spiffe://example.org/forged") // ignored in mtls mode
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || (tc.want != "" && string(body) != tc.want) {
				t.Fatalf("got %d %q", resp.StatusCode, body)
			}
		})
	}
}

func TestHeaderModes(t *testing.T) {
	req := func(remote string, vals ...string) *http.Request {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = remote
		for _, v := range vals {
			r.Header.Add(identity.DefaultHeader, v)
		}
		return r
	}
	trusted, _ := identity.New(identity.Config{Mode: identity.ModeHeader, TrustedProxies: []string{"10.0.0.0/8", "::1/128"}})
	if id, err := trusted.Identify(req("10.1.2.3:5555", "worker-a")); err != nil || id != "worker-a" {
		t.Fatalf("trusted proxy: %q %v", id, err)
	}
	if id, err := trusted.Identify(req("[::1]:5555", "worker-a")); err != nil || id != "worker-a" {
		t.Fatalf("trusted v6 proxy: %q %v", id, err)
	}
	if _, err := trusted.Identify(req("192.168.1.1:5555", "worker-a")); !errors.Is(err, identity.ErrUntrusted) {
		t.Fatalf("untrusted address: %v", err)
	}
	if _, err := trusted.Identify(req("10.1.2.3:5555", "a", "b")); !errors.Is(err, identity.ErrNoIdentity) {
		t.Fatalf("two identity headers: %v", err)
	}
	xfcc, _ := identity.New(identity.Config{Mode: identity.ModeHeader, Header: identity.XFCC, TrustedProxies: []string{"127.0.0.1/32"}})
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "127.0.0.1:1"
	r.Header.Set(identity.XFCC, `By=spiffe://example.org/proxy;Hash=abc;URI=spiffe://example.org/first,By=spiffe://example.org/proxy;URI=spiffe://example.org/ns/x/sa/worker`)
	if id, err := xfcc.Identify(r); err != nil || id != "spiffe://example.org/ns/x/sa/worker" {
		t.Fatalf("XFCC: %q %v", id, err)
	}
}

func TestValidateReportsEveryError(t *testing.T) {
	errs := identity.Config{Mode: "psychic", TrustedProxies: []string{"not-a-cidr"}}.Validate()
	if len(errs) != 2 {
		t.Fatalf("errors: %v", errs)
	}
	if errs := (identity.Config{Mode: identity.ModeHeader}).Validate(); len(errs) != 1 {
		t.Fatalf("header mode without trusted proxies: %v", errs)
	}
}
