package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/identity"
)

// TestXFCCQuotingCannotActOnAnotherOwnersLease runs the registry in header
// mode behind a trusted proxy (loopback) that sets X-Forwarded-Client-Cert,
// and replays the quoting attacks of issue 8 over real HTTP: an attacker
// whose header hides the victim's SPIFFE ID inside a quoted Subject, or
// names two URIs, or leaves a quote open, can neither renew, release,
// re-acquire (and so receive the grant of) nor look up the victim's lease.
// With the split-based parser each of these requests acted as the victim.
func TestXFCCQuotingCannotActOnAnotherOwnersLease(t *testing.T) {
	const (
		victim   = "spiffe://td/ns/a/sa/victim"
		attacker = "spiffe://td/ns/a/sa/attacker"
	)
	attacks := []string{
		`By=spiffe://td/proxy;Subject="CN=x;URI=` + victim + `";URI=` + attacker,
		`By=spiffe://td/proxy;URI=` + attacker + `;Subject="CN=x,URI=` + victim + `"`,
		`By=spiffe://td/proxy;Subject="CN=\"x;URI=` + victim + `\"";URI=` + attacker,
		`By=spiffe://td/proxy;URI=` + victim + `;URI=` + attacker,
		`By=spiffe://td/proxy;URI=` + victim + `;Subject="CN=x`,
		`By=spiffe://td/proxy;URI=` + victim + `;junk`,
	}
	for _, td := range []string{"", "td"} {
		t.Run("trustDomain="+td, func(t *testing.T) {
			f := newFixture(t, identity.Config{Mode: identity.ModeHeader, Header: identity.XFCC,
				TrustedProxies: []string{"127.0.0.0/8"}, TrustDomain: td})
			as := func(xfcc string) []string { return []string{identity.XFCC, xfcc} }
			victimHdr := as(`By=spiffe://td/proxy;Hash=abc;Subject="CN=victim,O=a";URI=` + victim)
			acquireBody := `{"resource":"inv/1","requestId":"victim-req","ttlMs":1000}`

			resp := f.do(t, "POST", "/v1/leases", "", "application/json", acquireBody, victimHdr...)
			var held fencegate.Lease
			if err := json.NewDecoder(resp.Body).Decode(&held); err != nil || resp.StatusCode != http.StatusCreated || held.Owner != victim || held.Grant == "" {
				t.Fatalf("victim acquire: %d %+v %v", resp.StatusCode, held, err)
			}

			for _, a := range attacks {
				for _, op := range []struct{ method, path, body string }{
					{"POST", "/v1/leases/" + held.Lease + "/renew", `{"ttlMs":1000}`},
					{"POST", "/v1/leases/" + held.Lease + "/release", ""},
					{"POST", "/v1/leases", acquireBody},
					{"GET", "/v1/requests/victim-req", ""},
				} {
					ctype := ""
					if op.body != "" {
						ctype = "application/json"
					}
					resp := f.do(t, op.method, op.path, "", ctype, op.body, as(a)...)
					body, _ := io.ReadAll(resp.Body)
					var d fencegate.Problem
					_ = json.Unmarshal(body, &d)
					switch {
					case resp.StatusCode < 400:
						t.Fatalf("%s %s with %s: %d %s — acted as the victim", op.method, op.path, a, resp.StatusCode, body)
					case d.Code != fencegate.CodeIdentityRequired && d.Code != fencegate.CodeNotOwner &&
						d.Code != fencegate.CodeLeaseHeld && d.Code != fencegate.CodeNotFound:
						t.Fatalf("%s %s with %s: %d %s", op.method, op.path, a, resp.StatusCode, body)
					case strings.Contains(string(body), held.Grant):
						t.Fatalf("%s %s with %s: the victim's grant leaked", op.method, op.path, a)
					}
				}
			}

			// The victim's lease is untouched and still the victim's to use.
			var got fencegate.Lease
			resp = f.do(t, "GET", "/v1/leases/"+held.Lease+"/status", "", "", "")
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || got.State != "HELD" || got.Owner != victim || got.FenceToken != held.FenceToken {
				t.Fatalf("victim lease after the attacks: %+v %v", got, err)
			}
			if resp := f.do(t, "POST", "/v1/leases/"+held.Lease+"/release", "", "", "", victimHdr...); resp.StatusCode != http.StatusOK {
				t.Fatalf("victim release: %d", resp.StatusCode)
			}
		})
	}
}
