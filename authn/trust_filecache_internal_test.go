package authn

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lestrrat-go/jwx/v2/jwa"

	"github.com/fencegate/fencegate/keys"
	"github.com/fencegate/fencegate/verify/verifytest"
)

// A file read again with the same bytes is the file parsed before; other
// bytes, or the other allowHS, are parsed as new; a refused file is
// refused at every read; the cache stays bounded.
func TestBundleCache(t *testing.T) {
	a, b := verifytest.NewIssuer(t, jwa.EdDSA), verifytest.NewIssuer(t, jwa.EdDSA)
	setA, _ := keys.Bundle(false, a.Key())
	setAB, _ := keys.Bundle(false, a.Key(), b.Key())
	rawA, _ := jsonOf(setA)
	rawAB, _ := jsonOf(setAB)
	path := filepath.Join(t.TempDir(), "jwks.json")
	read := func(raw []byte, allowHS bool) *bundleFile {
		t.Helper()
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := readBundleFile(path, allowHS)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	f1 := read(rawA, false)
	if f2 := read(append([]byte(nil), rawA...), false); f2 != f1 {
		t.Error("the same bytes were parsed again")
	}
	if f3 := read(rawA, true); f3 == f1 || f3.sum != f1.sum {
		t.Error("allowHS shares the parse of the file without it")
	}
	fab := read(rawAB, false)
	if fab == f1 || len(fab.keys) != 2 || len(f1.keys) != 1 {
		t.Errorf("a changed file: %d keys, the first %d", len(fab.keys), len(f1.keys))
	}
	hs := []byte(`{"keys":[{"kty":"oct","kid":"h","alg":"HS256","k":"` + strings.Repeat("A", 43) + `"}]}`)
	for range 2 {
		if err := os.WriteFile(path, hs, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := readBundleFile(path, false); err == nil {
			t.Fatal("an HS256 key without allowHS: parsed")
		}
	}
	for i := range 3 * maxParsedBundles {
		set, _ := keys.Bundle(false, verifytest.NewIssuer(t, jwa.EdDSA).Key())
		raw, _ := jsonOf(set)
		_ = read(raw, i%2 == 0)
	}
	parsedBundles.mu.Lock()
	n := len(parsedBundles.files)
	parsedBundles.mu.Unlock()
	if n > maxParsedBundles {
		t.Errorf("%d files kept, at most %d", n, maxParsedBundles)
	}
}

// The bundle of all a file's keys is built once per file (and allowHS);
// a subset of them gets a bundle of its own, of those keys only.
func TestFileKeySet(t *testing.T) {
	a, b := verifytest.NewIssuer(t, jwa.EdDSA), verifytest.NewIssuer(t, jwa.EdDSA)
	f := bundleOf(t, a.Key(), b.Key())
	all1, err := f.keySet(f.keys, false)
	if err != nil {
		t.Fatal(err)
	}
	all2, _ := f.keySet(append([]fileKey(nil), f.keys...), false)
	if all1 != all2 || len(all1.KeyIDs()) != 2 {
		t.Errorf("all keys: %p %p, %v", all1, all2, all1.KeyIDs())
	}
	if hs, _ := f.keySet(f.keys, true); hs == all1 || hs == nil {
		t.Error("allowHS shares the bundle built without it")
	}
	one, err := f.keySet(f.keys[:1], false)
	if err != nil || one == all1 || len(one.KeyIDs()) != 1 || one.KeyIDs()[0] != f.keys[0].kid {
		t.Errorf("a subset: %v %v", one, err)
	}
	if none, err := f.keySet(nil, false); none != nil || err != nil {
		t.Errorf("no keys: %v %v", none, err)
	}
}
