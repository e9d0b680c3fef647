package outbound

import (
	"net/http"
	"strings"
	"testing"
)

// cgiVar is the variable a CGI, WSGI or Rack gateway maps a header name
// to: HTTP_ and the name upper-cased (Unicode-aware, as Python's
// str.upper), '-' and '.' as '_'.
func cgiVar(name string) string {
	return "HTTP_" + strings.NewReplacer("-", "_", ".", "_").Replace(strings.ToUpper(name))
}

// tokenName reports whether name is an RFC 9110 token: the only names Go's
// server lets into Request.Header.
func tokenName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// FuzzFoldName: the name normaliser never panics, is idempotent, keeps
// the length, and, on every name that can reach the sidecar (a token),
// agrees with the CGI mapping: two names fold alike exactly when a
// gateway maps them to the same variable, a name is the sidecar's exactly
// when its variable starts with HTTP_FENCE_, and removeSpellings removes
// exactly the names a gateway would read as the given one.
func FuzzFoldName(f *testing.F) {
	for _, s := range [][2]string{
		{"Fence_Token", "Fence-Token"}, {"fence.token", "FENCE_TOKEN"}, {"Fence.Operation-Id", "Fence_Operation_Id"},
		{"Idempotency_Key", "Idempotency-Key"}, {"idempotency.key", "X-Idempotency-Key"}, {"FenceToken", "Fence-Token"},
		{"Fence", "Fence-"}, {"Fence_", "fence-"}, {"X-Fence-Token", "Fence-Token"}, {"Fence~Token", "Fence-Token"},
		{"\u0131dempotency-Key", "Idempotency-Key"}, {"Fence-To\u212aen", "Fence-Token"}, {"", "-"}, {"\xff_", "\xff."},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		fa, fb := foldName(a), foldName(b)
		if foldName(fa) != fa || len(fa) != len(a) {
			t.Fatalf("foldName(%q) = %q, not idempotent or not the same length", a, fa)
		}
		if foldedHasPrefix(a, fb) != strings.HasPrefix(fa, fb) {
			t.Fatalf("foldedHasPrefix(%q, %q) disagrees with foldName", a, fb)
		}
		h := http.Header{a: {"1"}, b: {"2"}}
		removeSpellings(h, b)
		if _, ok := h[b]; ok {
			t.Fatalf("removeSpellings(%q) kept %q itself", b, b)
		}
		if _, ok := h[a]; ok == (fa == fb) {
			t.Fatalf("removeSpellings(%q): %q kept %v, folded %q and %q", b, a, ok, fa, fb)
		}
		h = http.Header{a: {"1"}}
		RemoveSidecarOwned(h)
		if _, ok := h[a]; ok == SidecarOwned(a) {
			t.Fatalf("removeSidecarOwned: %q kept %v, owned %v", a, ok, SidecarOwned(a))
		}
		if !tokenName(a) || !tokenName(b) {
			return
		}
		if (fa == fb) != (cgiVar(a) == cgiVar(b)) {
			t.Fatalf("%q and %q: folded %q and %q, but CGI variables %s and %s", a, b, fa, fb, cgiVar(a), cgiVar(b))
		}
		if SidecarOwned(a) != strings.HasPrefix(cgiVar(a), "HTTP_FENCE_") {
			t.Fatalf("%q: sidecarOwned %v, but its CGI variable is %s", a, SidecarOwned(a), cgiVar(a))
		}
		if c := http.CanonicalHeaderKey(a); foldName(c) != fa || SidecarOwned(c) != SidecarOwned(a) {
			t.Fatalf("%q and its canonical key %q fold differently", a, c)
		}
	})
}
