package identity_test

import (
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/fencegate/fencegate/identity"
)

const (
	victim   = "spiffe://td/victim"
	attacker = "spiffe://td/attacker"
)

// identifyXFCC runs a header-mode resolver trusting the test request's
// address on one XFCC header value.
func identifyXFCC(t testing.TB, trustDomain, v string) (string, error) {
	t.Helper()
	res, err := identity.New(identity.Config{Mode: identity.ModeHeader, Header: identity.XFCC,
		TrustedProxies: []string{"192.0.2.0/24"}, TrustDomain: trustDomain})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/", nil) // from 192.0.2.1
	r.Header.Set(identity.XFCC, v)
	return res.Identify(r)
}

// TestXFCCQuoting: quoted values are values, never pairs or elements; the
// identity is the single URI of the last element, and anything malformed or
// ambiguous is ErrNoIdentity. The attack rows named "attack" identified the
// caller as the victim with the split-based parser.
func TestXFCCQuoting(t *testing.T) {
	for _, tc := range []struct {
		name, header, want string // want "" means ErrNoIdentity
	}{
		// The attacks of issue 8.
		{"attack: URI hidden after ';' in a quoted Subject", `Subject="CN=x;URI=` + victim + `";URI=` + attacker, attacker},
		{"attack: element hidden after ',' in a quoted Subject", `URI=` + attacker + `;Subject="CN=x,URI=` + victim + `"`, attacker},
		{"attack: two URI keys, victim first", `URI=` + victim + `;URI=` + attacker, ""},
		{"two URI keys, attacker first", `URI=` + attacker + `;URI=` + victim, ""},
		{"two URI keys, different case", `URI=` + victim + `;uri=` + attacker, ""},
		// Escaped quotes and backslashes inside a quoted Subject.
		{"attack: escaped quotes around URI= in Subject", `Subject="CN=\"x;URI=` + victim + `\"";URI=` + attacker, attacker},
		{"attack: escaped quote does not close the Subject", `Subject="CN=x\";URI=` + victim + `";URI=` + attacker, attacker},
		{"escaped backslash then the closing quote", `Subject="CN=x\\";URI=` + attacker, attacker},
		{"attack: escaped backslash and escaped quote", `Subject="CN=x\\\";URI=` + victim + `";URI=` + attacker, attacker},
		{"RFC 2253 escapes in Subject", `Subject="CN=Doe\, John+O=a\;b";URI=` + attacker, attacker},
		// Commas inside quotes.
		{"comma in Subject of the last element", `By=spiffe://td/p;URI=spiffe://td/first,By=spiffe://td/proxy;Subject="O=a,CN=b";URI=spiffe://td/worker`, "spiffe://td/worker"},
		{"attack: comma in Subject of an earlier element", `Subject="a,URI=` + victim + `";URI=` + attacker + `,By=spiffe://td/p;URI=spiffe://td/worker`, "spiffe://td/worker"},
		{"quoted URI with separators inside", `URI="spiffe://td/a,b;c=d"`, "spiffe://td/a,b;c=d"},
		{"quoted URI", `URI="` + attacker + `"`, attacker},
		{"'=' in an unquoted value", `Hash=a=b;URI=` + attacker, attacker},
		// Only the last element counts.
		{"attack: trailing element without URI", `URI=` + victim + `,By=spiffe://td/proxy;Hash=abc`, ""},
		{"attack: trailing comma", `URI=` + victim + `,`, ""},
		{"empty element between", `URI=` + victim + `,,URI=` + attacker, ""},
		{"leading comma", `,URI=` + attacker, ""},
		{"Envoy's two-certificate example", `By=http://frontend.lyft.com;Hash=468ed33be74eee6556d90c0149c1309e9ba61d6425303443c0748a02dd8de688;URI=http://testclient.lyft.com,By=http://backend.lyft.com;Hash=9ba61d6425303443c0748a02dd8de688468ed33be74eee6556d90c0149c1309e;URI=http://frontend.lyft.com`, "http://frontend.lyft.com"},
		{"Envoy's URI and DNS example", `By=http://frontend.lyft.com;Hash=468ed33be74eee6556d90c0149c1309e9ba61d6425303443c0748a02dd8de688;Subject="/C=US/ST=CA/L=San Francisco/OU=Lyft/CN=Test Client";URI=http://testclient.lyft.com;DNS=lyft.com;DNS=www.lyft.com`, "http://testclient.lyft.com"},
		{"lower-case key", `uri=` + attacker, attacker},
		{"mixed-case keys", `bY=spiffe://td/p;SUBJECT="x";Uri=` + attacker, attacker},
		// Whitespace.
		{"whitespace around separators", "By=spiffe://td/p ;\tURI=" + victim + " , URI=" + attacker + " ", attacker},
		{"leading and trailing whitespace", "  URI=" + attacker + "\t", attacker},
		{"whitespace after a quoted value", `Subject="a" ; URI=` + attacker, attacker},
		{"whitespace before '='", `URI =` + attacker, ""},
		{"whitespace after '='", `URI= ` + attacker, ""},
		{"whitespace inside an unquoted value", `URI=spiffe://td/a b`, ""},
		// Malformed.
		{"attack: unterminated quote", `URI=` + victim + `;Subject="CN=x`, ""},
		{"attack: unterminated quoted URI", `URI="` + victim, ""},
		{"unterminated after an escaped quote", `URI=` + attacker + `;Subject="CN=x\"`, ""},
		{"backslash at the end", `URI=` + attacker + `;Subject="CN=x\`, ""},
		{"attack: stray quote in an unquoted value", `URI=` + victim + `"x`, ""},
		{"attack: byte after a closing quote", `URI="` + victim + `"x`, ""},
		{"quote opening mid-value", `URI=spiffe://td/"a,b"`, ""},
		{"attack: pair without '='", `URI=` + victim + `;junk`, ""},
		{"pair without '=' before the URI", `junk;URI=` + attacker, ""},
		{"empty key", `=x;URI=` + attacker, ""},
		{"quote in a key", `"URI"=` + attacker, ""},
		{"empty pair", `By=spiffe://td/p;;URI=` + attacker, ""},
		{"trailing ';'", `URI=` + attacker + `;`, ""},
		{"empty URI", `URI=`, ""},
		{"empty quoted URI", `URI=""`, ""},
		{"empty URI and a URI", `URI=;URI=` + attacker, ""},
		{"no URI", `By=spiffe://td/p;Hash=abc`, ""},
		{"only separators", `;;,=,URI=`, ""},
		{"control character in a URI", "URI=" + attacker + "\x01", ""},
		{"DEL in a quoted Subject", "Subject=\"a\x7f\";URI=" + attacker, ""},
		{"tab inside a quoted value", "Subject=\"a\tb\";URI=" + attacker, ""},
		{"escaped control character", "Subject=\"a\\\x01\";URI=" + attacker, ""},
		{"URI not UTF-8", "URI=spiffe://td/\xff", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := identifyXFCC(t, "", tc.header)
			if tc.want == "" {
				if !errors.Is(err, identity.ErrNoIdentity) {
					t.Fatalf("%s: got %q, %v; want ErrNoIdentity", tc.header, id, err)
				}
				return
			}
			if err != nil || id != tc.want {
				t.Fatalf("%s: got %q, %v; want %q", tc.header, id, err, tc.want)
			}
		})
	}
}

// TestHeaderTrustDomain: with a trust domain configured, the header modes
// accept only canonical SPIFFE IDs of that domain, from XFCC and from the
// plain identity header alike.
func TestHeaderTrustDomain(t *testing.T) {
	for _, tc := range []struct {
		name, id string
		ok       bool
	}{
		{"in the trust domain", "spiffe://td/ns/a/sa/w", true},
		{"other trust domain", "spiffe://evil/ns/a/sa/w", false},
		{"trust domain as a suffix", "spiffe://evil.td/w", false},
		{"not SPIFFE", "https://td/w", false},
		{"plain name", "worker-a", false},
		{"upper-case scheme", "SPIFFE://td/w", false},
		{"port", "spiffe://td:443/w", false},
		{"user info", "spiffe://u@td/w", false},
		{"query", "spiffe://td/w?x=1", false},
		{"empty query", "spiffe://td/w?", false},
		{"empty fragment", "spiffe://td/w#", false},
		{"percent-encoding", "spiffe://td/%77", false},
		{"trust domain as a prefix", "spiffe://tdx/w", false},
		{"trailing slash", "spiffe://td/w/", false},
		{"empty segment", "spiffe://td/a//b", false},
		{"dot segment", "spiffe://td/a/../b", false},
		{"space in a quoted URI", `"spiffe://td/a b"`, false},
		{"trust domain ID", "spiffe://td", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := identifyXFCC(t, "td", "By=spiffe://td/proxy;URI="+tc.id)
			if tc.ok != (err == nil) || (err == nil && id != tc.id) || (err != nil && !errors.Is(err, identity.ErrNoIdentity)) {
				t.Fatalf("XFCC URI=%s: got %q, %v; accept %v", tc.id, id, err, tc.ok)
			}
			for _, mode := range []string{identity.ModeHeader, identity.ModeInsecureHeader} {
				res, err := identity.New(identity.Config{Mode: mode, TrustedProxies: []string{"192.0.2.0/24"}, TrustDomain: "td"})
				if err != nil {
					t.Fatal(err)
				}
				r := httptest.NewRequest("GET", "/", nil)
				r.Header.Set(identity.DefaultHeader, tc.id)
				id, err := res.Identify(r)
				if tc.ok != (err == nil) || (err == nil && id != tc.id) || (err != nil && !errors.Is(err, identity.ErrNoIdentity)) {
					t.Fatalf("%s %s: got %q, %v; accept %v", mode, tc.id, id, err, tc.ok)
				}
			}
		})
	}
	// Without a trust domain a header identity is any name, as before.
	if id, err := identifyXFCC(t, "", "URI=worker-a"); err != nil || id != "worker-a" {
		t.Fatalf("no trust domain: %q %v", id, err)
	}
}
