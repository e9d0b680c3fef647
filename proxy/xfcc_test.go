package proxy_test

import (
	"net/http"
	"testing"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/identity"
	"github.com/fencegate/fencegate/proxy"
)

// xfccIdentity runs the sidecar in header mode behind a mesh proxy on
// loopback that sets X-Forwarded-Client-Cert.
func xfccIdentity(trustDomain string) fixtureOpt {
	return func(c *proxy.Config) {
		c.Identity = identity.Config{Mode: identity.ModeHeader, Header: identity.XFCC,
			TrustedProxies: []string{"127.0.0.0/8"}, TrustDomain: trustDomain}
	}
}

// TestXFCCQuotingCannotWriteWithAnotherOwnersGrant: a caller holding the
// victim's grant (stolen or replayed) whose XFCC header hides the victim's
// SPIFFE ID in a quoted Subject, names two URIs or leaves a quote open is
// refused before anything is forwarded or recorded; with the split-based
// parser these writes were forwarded as the victim's. The victim's own
// header then writes, so the refusals are about identity, not the setup.
func TestXFCCQuotingCannotWriteWithAnotherOwnersGrant(t *testing.T) {
	const (
		victim   = "spiffe://td/ns/a/sa/victim"
		attacker = "spiffe://td/ns/a/sa/attacker"
	)
	attacks := []string{
		`By=spiffe://td/proxy;Subject="CN=x;URI=` + victim + `";URI=` + attacker,
		`By=spiffe://td/proxy;URI=` + attacker + `;Subject="CN=x,URI=` + victim + `"`,
		`By=spiffe://td/proxy;Subject="CN=\"x;URI=` + victim + `\"";URI=` + attacker,
		`By=spiffe://td/proxy;Subject="CN=x\";URI=` + victim + `";URI=` + attacker,
		`By=spiffe://td/proxy;URI=` + victim + `;URI=` + attacker,
		`By=spiffe://td/proxy;URI=` + victim + `;Subject="CN=x`,
		`URI=` + attacker + `,By=spiffe://td/proxy;Subject="CN=a,URI=` + victim + `"`,
	}
	for _, td := range []string{"", "td"} {
		t.Run("trustDomain="+td, func(t *testing.T) {
			f := newFixture(t, xfccIdentity(td))
			l := f.acquire(victim, "item/1")
			for _, a := range attacks {
				ans := f.do(call{path: "/v1/items/1", grant: string(l.Grant), body: "attacker's write",
					hdr: http.Header{identity.XFCC: {a}}})
				if ans.problem == nil || (ans.problem.Code != fencegate.CodeIdentityRequired && ans.problem.Code != fencegate.CodeOwnerMismatch) {
					t.Fatalf("write with %s: %d %+v %q", a, ans.code, ans.problem, ans.body)
				}
				if n := f.back.count(); n != 0 {
					t.Fatalf("write with %s: the backend saw %d requests", a, n)
				}
				if rec, ok := f.record("item/1"); ok {
					t.Fatalf("write with %s: the store recorded %+v", a, rec)
				}
			}
			ans := f.do(call{path: "/v1/items/1", grant: string(l.Grant), body: "v1",
				hdr: http.Header{identity.XFCC: {`By=spiffe://td/proxy;Subject="CN=victim,O=a";URI=` + victim}}})
			ans.expect(t, http.StatusCreated, "")
			if f.back.count() != 1 || ans.body != "stored v1" {
				t.Fatalf("victim's write: %d backend requests, %q", f.back.count(), ans.body)
			}
		})
	}
}
