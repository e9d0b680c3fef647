package inbound

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// lenientSpellings are spellings of PUT /v1/items/1 that backends treat
// as the same resource (story 5).
var lenientSpellings = []string{
	"/v1/items/1",
	"/v1/items/1/",
	"/v1/items/1//",
	"//v1/items/1",
	"/v1//items///1",
	"/v1/./items/1",
	"/v1/items/./1",
	"/v1/a/../items/1",
	"/v1/a/b/../../items/1",
	"/x/../../v1/items/1", // above the root stays at the root
	"/V1/ITEMS/1",
	"/v1/Items/1",
	"/v1/items;v=1/1",
	"/v1;x/items/1;y",
	"/v1/x/..;/items/1", // Tomcat's "..;"
	`/v1\items\1`,
	`\v1\items\1`,
	"/v1/%69tems/1",
	"/v1/%49TEMS/1",
	"/%76%31/%69%74%65%6d%73/%31",
	"/v1%2Fitems%2F1",
	"/v1%2fitems%2f1",
	"/v1%5Citems%5C1",
	"/v1/%2e/items/1",
	"/v1/x/%2e%2e/items/1",
	"/v1/x/%2E%2E/items/1",
	"/v1/%2569tems/1",   // double encoding
	"/v1/%252569tems/1", // triple
	"/v1/items%253Bx/1", // an encoded ';' encoded again
	"/v1/items/1%3Bx",
	"/v1/items/%31",
}

func TestLenientPathSpellings(t *testing.T) {
	for _, p := range lenientSpellings {
		readings, ok := LenientPaths(p)
		if !ok || !slices.Contains(readings, "/V1/ITEMS/1") {
			t.Errorf("lenientPaths(%q) = %q, %v; want a reading /V1/ITEMS/1", p, readings, ok)
		}
	}
	// The Kelvin sign folds with k, the long s with s.
	if got, _ := lenientPath("/v1/\u212Aits/\u017Fet"); got != "/V1/KITS/SET" {
		t.Errorf("Unicode folding: %q", got)
	}
	// The two orders of merging slashes and removing dot segments.
	for p, want := range map[string][2]string{
		"/v1//../items/1":   {"/ITEMS/1", "/V1/ITEMS/1"},
		"/v1/items/x//../1": {"/V1/ITEMS/1", "/V1/ITEMS/X/1"},
	} {
		merged, _ := lenientPath(p)
		rfc, _ := lenientPathRFC(p)
		if merged != want[0] || rfc != want[1] {
			t.Errorf("%q: merged first %q, RFC order %q; want %q, %q", p, merged, rfc, want[0], want[1])
		}
		if readings, _ := LenientPaths(p); !slices.Contains(readings, "/V1/ITEMS/1") {
			t.Errorf("lenientPaths(%q) = %q", p, readings)
		}
	}
	// Not the same resource.
	for _, p := range []string{"/v1/items/2", "/v1/items", "/v1/items/1/parts", "/v1/items/1%2Fparts", "/v2/items/1", "/v1/items/1x"} {
		if readings, ok := LenientPaths(p); !ok || slices.Contains(readings, "/V1/ITEMS/1") {
			t.Errorf("lenientPaths(%q) = %q, %v", p, readings, ok)
		}
	}
}

// TestLenientPathRefuses: no lenient reading (such a mutation is never
// passed unchecked).
func TestLenientPathRefuses(t *testing.T) {
	for _, p := range []string{
		"/v1/items/1\x00",
		"/v1/items/1%00",
		"/v1/items/1%2500", // NUL, double encoded
		"/v1/items%0A/1",
		"/v1/items%0d/1",
		"/v1/items/1%7F",
		"/v1/items/1%C2%85",                   // C1 control (NEL)
		"/v1%C0%AFitems%C0%AF1",               // overlong '/'
		"/v1/items/%C0%AE%C0%AE/1",            // overlong '.'
		"/v1/items/%E0%80%AF",                 // overlong '/', three bytes
		"/v1/items/%ED%A0%80",                 // a surrogate
		"/v1/items/%FF",                       // not UTF-8
		"/v1/items/\xff",                      // raw, not UTF-8
		"/v1/items/1\t",                       // raw control
		"/%" + strings.Repeat("25", 8) + "41", // needs 9 rounds: does not settle in maxDecodeRounds
	} {
		if got, ok := LenientPaths(p); ok {
			t.Errorf("lenientPaths(%q) = %q, want no reading", p, got)
		}
	}
	// Settles within the bound (8 rounds).
	if got, ok := lenientPath("/%" + strings.Repeat("25", 7) + "41"); !ok || got != "/A" {
		t.Errorf("seven rounds: %q %v", got, ok)
	}
	// A '%' that is not an escape stays.
	if got, ok := lenientPath("/a%zz/b%"); !ok || got != "/A%ZZ/B%" {
		t.Errorf("lone percent: %q %v", got, ok)
	}
}

// FuzzLenientPath: no input panics; each reading is idempotent, valid
// UTF-8, absolute, with no empty, dot or ";" segment part left.
func FuzzLenientPath(f *testing.F) {
	for _, p := range lenientSpellings {
		f.Add(p)
	}
	for _, p := range []string{"/v1//../items/1", "/%2525", "/a%zz", "/..;/..;/x", "/%C0%AF", "/\u212A", "/%%41", "/%2%35%34"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		for name, read := range map[string]func(string) (string, bool){"merged": lenientPath, "rfc": lenientPathRFC} {
			r, ok := read(p)
			if !ok {
				continue
			}
			again, ok := read(r)
			if !ok || again != r {
				t.Fatalf("%s: not idempotent: %q → %q → %q (%v)", name, p, r, again, ok)
			}
			if !utf8.ValidString(r) || !strings.HasPrefix(r, "/") || strings.Contains(r, "//") || strings.ContainsAny(r, ";\\") ||
				(len(r) > 1 && strings.HasSuffix(r, "/")) {
				t.Fatalf("%s: %q → %q", name, p, r)
			}
			for _, s := range strings.Split(r[1:], "/") {
				if s == "." || s == ".." {
					t.Fatalf("%s: %q → %q keeps a dot segment", name, p, r)
				}
			}
		}
	})
}
