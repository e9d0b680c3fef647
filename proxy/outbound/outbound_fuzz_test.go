package outbound

import (
	"bufio"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// FuzzOutboundURL: for any request target Go's server accepts, the target
// sent to the backend decodes to the path the sidecar decided on (behind
// the backend URL's path) with the query unchanged, and an origin-form
// target not starting with "//" is sent byte for byte.
func FuzzOutboundURL(f *testing.F) {
	for _, s := range []string{"/posts?title=a;b", "/a%2Fb", "/a%20b?x", "/a%7eb", `/a"b`, "//x/y?z", "/?", "*", "http://h/p?q", "/a#f", "/%41", "/a;b/c?%zz"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, target string, prefixed bool) {
		in, err := http.ReadRequest(bufio.NewReader(strings.NewReader("OPTIONS " + target + " HTTP/1.1\r\nHost: app.test\r\n\r\n")))
		if err != nil {
			return
		}
		backend, prefix := "http://127.0.0.1:8080", ""
		if prefixed {
			backend, prefix = "http://127.0.0.1:8080/api/", "/api"
		}
		b, _ := url.Parse(backend)
		tg, _ := NewTarget(b, nil)
		u := tg.URL(in)
		if u.Scheme != "http" || u.Host != "127.0.0.1:8080" {
			t.Fatalf("%q: sent to %s://%s", target, u.Scheme, u.Host)
		}
		ruri := u.RequestURI()
		if in.URL.Path == "*" && !prefixed {
			if ruri != "*"+strings.TrimPrefix(target, "*") {
				t.Fatalf("%q: sent as %q", target, ruri)
			}
			return
		}
		sent, err := url.ParseRequestURI(ruri)
		if err != nil {
			t.Fatalf("%q: sent as %q, which does not parse: %v", target, ruri, err)
		}
		wantPath := prefix + "/" + strings.TrimPrefix(in.URL.Path, "/")
		if sent.Host != "" || sent.Path != wantPath || sent.RawQuery != in.URL.RawQuery || sent.ForceQuery != in.URL.ForceQuery {
			t.Fatalf("%q: sent as %q: path %q query %q, want path %q query %q", target, ruri, sent.Path, sent.RawQuery, wantPath, in.URL.RawQuery)
		}
		if strings.HasPrefix(target, "/") && !strings.HasPrefix(prefix+target, "//") && ruri != prefix+target {
			t.Fatalf("%q: sent as %q, not byte for byte", target, ruri)
		}
	})
}
