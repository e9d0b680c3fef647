package overlap

import "testing"

func TestSearchOverlap(t *testing.T) {
	for _, c := range []struct {
		a, b    string
		overlap bool
	}{
		// The story: a literal next to a parameter, a regexp, catch-alls.
		{"/v1/items/{id}", "/v1/items/42", true},
		{"/v1/items/{id}", "/v1/items/{id:[0-9]+}", true},
		{"/v1/items/{id}", "/v1/*", true},
		{"/v1/items/{id}", "/*", true},
		{"/v1/items/{id}", "/v1/items/*", true},
		{"/v1/items/{id}", "/v1/{kind}/{id}", true},
		// Disjoint.
		{"/v1/items/{id}", "/v1/docs/{id}", false},
		{"/v1/items/{id}", "/v1/items/{id}/parts", false},
		{"/v1/items/{id}", "/v1/items", false},
		{"/v1/items/{id}", "/v1/items/", false}, // chi needs a byte for {id}
		{"/v1/items/{id:[0-9]+}", "/v1/items/{name:[a-z]+}", false},
		{"/v1/items/{id:[0-9]{3}}", "/v1/items/1234", false},
		{"/v1/items/{id:[0-9]{3}}", "/v1/items/123", true},
		{"/v1/docs/*", "/v1/items/{id}", false},
		// Parameters inside a segment.
		{"/v1/files/{name}.json", "/v1/files/{name}.{ext}", true},
		{"/v1/files/{name}.json", "/v1/files/{name}.xml", false},
		{"/v1/{a}.json", "/v1/{b}", true},
		// A regexp parameter may hold a slash when its tail is not '/'; at
		// the end of a pattern its tail is '/'.
		{"/v1/{p:.+}", "/v1/a/b", false},
		{"/v1/{p:[^/]+}", "/v1/a/b", false},
		{"/v1/{p:.+}.json", "/v1/a/b.json", true},
		// chi anchors "a|b" as "^a|b$": any value starting with a or ending with b.
		{"/v1/{id:a|b}", "/v1/ax", true},
		{"/v1/{id:a|b}", "/v1/xb", true},
		{"/v1/{id:a|b}", "/v1/xa", false},
		{"/v1/{id:^(?:a|b)$}", "/v1/ax", false},
		// Case-folded literals.
		{"/v1/{x:(?i)abc}", "/v1/ABC", true},
		{"/v1/{x:(?i)abc}", "/v1/abd", false},
		// Empty values and catch-alls.
		{"/v1/{a}/x", "/v1//x", true},
		{"/v1/*", "/v1/", true},
		{"/v1/*", "/v1", false},
		// chi's fall-through: a parameter no value fits is taken as empty
		// and its children matched on the same input.
		{"/v1/{id:[0-9]+}/x", "/v1//x", true},
		{"/{x}{y}", "/a", true},
		{"/{x}{y}", "/a/b", false},
		// An assertion the search does not model cannot make a match of
		// impossible runes.
		{`/v1/{x:\bfoo\b}`, "/v1/bar", false},
		{`/v1/{x:\bfoo\b}`, "/v1/foo", true},
	} {
		for _, pair := range [][2]string{{c.a, c.b}, {c.b, c.a}} {
			got := Search([]string{pair[0], pair[1]}, nil)
			if got.Found != c.overlap {
				t.Errorf("overlap(%s, %s) = %v, want %v", pair[0], pair[1], got, c.overlap)
				continue
			}
			if got.Found && !got.Shown {
				t.Errorf("overlap(%s, %s) assumed, want a path", pair[0], pair[1])
			}
			if got.Shown && !(chiMatches(pair[0], got.Witness) && chiMatches(pair[1], got.Witness)) {
				t.Errorf("overlap(%s, %s): chi does not match the witness %q with both", pair[0], pair[1], got.Witness)
			}
		}
	}
}

// TestSearchOverlapAgainstChi compares the search with chi over every path
// up to a length, for a set of patterns: a pair overlaps when chi matches
// some path with both, and a path of one pattern that no other pattern
// matches is found when chi has one.
func TestSearchOverlapAgainstChi(t *testing.T) {
	patterns := []string{
		"/a", "/a/", "/{x}", "/a/{x}", "/{x}/a", "/{x}/{y}", "/a/*", "/*", "/{x}.a",
		"/{x}.{y}", "/{x:[0-9]+}", "/{x:[a-z]+}", "/{x:a|1}", "/{x:.+}", "/{x:.*a}",
		"/a/{x:[0-9]}", "/{x:(?i)A}", "/{x}/", "/{x:[^.]+}.{y}", "/a.{x}", "/{x:1.}/a",
		`/{x:\b1}`, "/{x}a", "/{x}{y}",
	}
	const alpha = "/a1.A"
	var paths []string
	var grow func(string)
	grow = func(p string) {
		paths = append(paths, p)
		if len(p) < 6 {
			for _, c := range alpha {
				grow(p + string(c))
			}
		}
	}
	grow("/")
	matches := make([][]bool, len(patterns))
	for i, pat := range patterns {
		matches[i] = make([]bool, len(paths))
		for j, path := range paths {
			matches[i][j] = chiMatches(pat, path)
		}
	}
	// Paths beyond the enumerated ones can make a pair overlap, so only
	// "chi has one" is checked against the search, and every shown witness
	// against chi.
	for i := range patterns {
		for k := range patterns {
			both, only := false, false
			for j := range paths {
				both = both || matches[i][j] && matches[k][j]
				only = only || matches[i][j] && !matches[k][j]
			}
			got := Search([]string{patterns[i], patterns[k]}, nil)
			if both && !got.Found {
				t.Errorf("%s and %s: chi matches a path with both, the search finds none", patterns[i], patterns[k])
			}
			if got.Shown && !(chiMatches(patterns[i], got.Witness) && chiMatches(patterns[k], got.Witness)) {
				t.Errorf("%s and %s: witness %q not matched by both", patterns[i], patterns[k], got.Witness)
			}
			diff := Search([]string{patterns[i]}, []string{patterns[k]})
			if only && !diff.Found {
				t.Errorf("%s but not %s: chi has a path, the search finds none", patterns[i], patterns[k])
			}
			if diff.Shown && (!chiMatches(patterns[i], diff.Witness) || chiMatches(patterns[k], diff.Witness)) {
				t.Errorf("%s but not %s: witness %q wrong", patterns[i], patterns[k], diff.Witness)
			}
		}
	}
}

func TestSearchOverlapUnsupported(t *testing.T) {
	// A pattern the search cannot read overlaps everything (fail closed).
	for _, pat := range []string{"/v1/{id", "/v1/*/x", "v1/x", "/v1/{a:(}"} {
		if got := Search([]string{"/v1/items/{id}", pat}, nil); !got.Found || got.Shown {
			t.Errorf("overlap with %q = %v, want assumed", pat, got)
		}
	}
}

// FuzzSearchOverlap: whenever chi matches a path with two patterns, the
// search reports their overlap; whenever it matches a path with one and not
// the other, the search reports that difference; no input panics.
func FuzzSearchOverlap(f *testing.F) {
	for _, s := range [][3]string{
		{"/v1/items/{id}", "/v1/items/42", "/v1/items/42"},
		{"/v1/{a}.json", "/v1/{b}", "/v1/x.json"},
		{"/v1/{p:.+}", "/v1/a/b", "/v1/a/b"},
		{"/v1/{id:a|b}", "/v1/ax", "/v1/ax"},
		{"/v1/*", "/v1/{x:[0-9]+}", "/v1/1"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, a, b, path string) {
		if len(a) > 64 || len(b) > 64 || len(path) > 64 {
			return
		}
		ma, mb := chiMatches(a, path), chiMatches(b, path)
		if ma && mb {
			if got := Search([]string{a, b}, nil); !got.Found {
				t.Fatalf("%q and %q both match %q; search: %v", a, b, path, got)
			}
		}
		if ma && !mb {
			if got := Search([]string{a}, []string{b}); !got.Found {
				t.Fatalf("%q matches %q and %q does not; search: %v", a, path, b, got)
			}
		}
	})
}
