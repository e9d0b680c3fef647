package identity_test

import (
	"net/http/httptest"
	"testing"

	"github.com/fencegate/fencegate/identity"
)

// FuzzIdentifyHeader: no identity header value (plain or XFCC) panics, and
// an accepted identity is never empty.
func FuzzIdentifyHeader(f *testing.F) {
	f.Add("worker-a", true)
	f.Add(`By=spiffe://a/b;URI=spiffe://example.org/x,URI="spiffe://example.org/y"`, true)
	f.Add(";;,=,URI=", true)
	plain, _ := identity.New(identity.Config{Mode: identity.ModeInsecureHeader})
	xfcc, _ := identity.New(identity.Config{Mode: identity.ModeHeader, Header: identity.XFCC, TrustedProxies: []string{"192.0.2.0/24"}})
	f.Fuzz(func(t *testing.T, v string, useXFCC bool) {
		r := httptest.NewRequest("GET", "/", nil)
		res := plain
		if useXFCC {
			res = xfcc
		}
		r.Header.Set(res.Header(), v)
		id, err := res.Identify(r)
		if err == nil && id == "" {
			t.Fatalf("empty identity accepted from %q", v)
		}
	})
}
