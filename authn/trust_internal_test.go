package authn

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"

	"github.com/fencegate/fencegate/keys"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/verify"
	"github.com/fencegate/fencegate/verify/verifytest"
)

func TestInUseStep(t *testing.T) {
	for ttl, want := range map[time.Duration]time.Duration{
		time.Millisecond:                    time.Second,
		10 * time.Second:                    time.Second,
		30 * time.Second:                    3 * time.Second,
		31 * time.Second:                    4 * time.Second, // 3.1 s up to whole seconds
		10 * time.Minute:                    time.Minute,
		24*time.Hour + 500*time.Millisecond: 8641 * time.Second,
	} {
		if got := inUseStep(ttl); got != want {
			t.Errorf("inUseStep(%s) = %s, want %s", ttl, got, want)
		}
	}
}

// bundleOf is a parsed plain bundle file of the keys.
func bundleOf(t *testing.T, ks ...jwk.Key) *bundleFile {
	t.Helper()
	set, err := keys.Bundle(false, ks...)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := jsonOf(set)
	f, err := parseBundleFile(raw, false)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func pinOf(k fileKey, until time.Time) store.TrustedKey {
	return store.TrustedKey{Kid: k.kid, Thumbprint: k.thumbprint, Alg: k.alg, InUseUntil: until}
}

// The pure rules of a reload: which pins go, which stay, which drops are
// refused.
func TestTrustPinRules(t *testing.T) {
	a, b, c := verifytest.NewIssuer(t, jwa.EdDSA), verifytest.NewIssuer(t, jwa.EdDSA), verifytest.NewIssuer(t, jwa.ES256)
	now := verifytest.T0
	ab, abc, onlyA, onlyC := bundleOf(t, a.Key(), b.Key()), bundleOf(t, a.Key(), b.Key(), c.Key()), bundleOf(t, a.Key()), bundleOf(t, c.Key())
	ka, _ := ab.find(a.KeyID())
	kb, _ := ab.find(b.KeyID())
	kc, _ := abc.find(c.KeyID())
	if ka.thumbprint != a.KeyID() { // keys.Generate's kid is the RFC 7638 thumbprint
		t.Fatalf("thumbprint %s of kid %s", ka.thumbprint, a.KeyID())
	}
	free := []store.TrustedKey{pinOf(ka, time.Time{}), pinOf(kb, time.Time{}), pinOf(kc, time.Time{})}
	inUse := []store.TrustedKey{pinOf(ka, time.Time{}), pinOf(kb, now.Add(time.Minute)), pinOf(kc, time.Time{})}
	for _, tc := range []struct {
		name        string
		f, prev     *bundleFile
		pins        []store.TrustedKey
		mem         map[string]time.Time
		force       bool
		unpin, kept []string
		keptLast    bool
	}{
		{"b left the file", onlyA, ab, free[:2], nil, false, []string{b.KeyID()}, nil, false},
		{"b left, in use by its pin", onlyA, ab, inUse[:2], nil, false, nil, []string{b.KeyID()}, false},
		{"b left, in use here", onlyA, ab, free[:2], map[string]time.Time{b.KeyID(): now.Add(time.Second)}, false, nil, []string{b.KeyID()}, false},
		{"b left, in use, forced", onlyA, ab, inUse[:2], nil, true, []string{b.KeyID()}, nil, false},
		{"c pinned elsewhere, never in this file: stays", ab, ab, free, nil, false, nil, nil, false},
		{"c pinned elsewhere, at the start: unpinned", ab, nil, free, nil, false, []string{c.KeyID()}, nil, false},
		{"nothing of the file pinned: the last pins stay", onlyC, ab, free[:2], nil, false, nil, nil, true},
	} {
		unpin, kept, last := toUnpin(tc.f, tc.prev, tc.pins, tc.mem, now, tc.force)
		if !slices.Equal(unpin, tc.unpin) || !slices.Equal(kept, tc.kept) || last != tc.keptLast {
			t.Errorf("%s: unpin %v kept %v last %v, want %v %v %v", tc.name, unpin, kept, last, tc.unpin, tc.kept, tc.keptLast)
		}
	}
	// A drop of a key of the current set in use is refused; a kid whose
	// material changed is a drop too.
	current := thumbprintsOf([]fileKey{ka, kb})
	if d := droppedInUse(current, onlyA.keys, indexPins(inUse), nil, now); !slices.Equal(d, []string{b.KeyID()}) {
		t.Fatalf("dropped in use %v", d)
	}
	if d := droppedInUse(current, onlyA.keys, indexPins(free), nil, now); len(d) != 0 {
		t.Fatalf("dropped, none in use: %v", d)
	}
	if d := droppedInUse(map[string]string{b.KeyID(): "other-material"}, ab.keys, indexPins(inUse), nil, now); !slices.Equal(d, []string{b.KeyID()}) {
		t.Fatalf("a kid with other material: %v", d)
	}
	// States.
	ix := indexPins([]store.TrustedKey{pinOf(ka, time.Time{}), {Kid: b.KeyID(), Thumbprint: ka.thumbprint, Alg: kb.alg}})
	if ix.stateOf(ka) != KeyTrusted || ix.stateOf(kb) != KeyConflict || ix.stateOf(kc) != KeyUnpinned {
		t.Fatalf("states %s %s %s", ix.stateOf(ka), ix.stateOf(kb), ix.stateOf(kc))
	}
	if got := trustedKeys(abc, ix); len(got) != 1 || got[0].kid != a.KeyID() {
		t.Fatalf("trusted %v", got)
	}
	if got := unpinnedKeys(abc, ix); len(got) != 1 || got[0].kid != c.KeyID() {
		t.Fatalf("unpinned %v (a conflict is never pinned over)", got)
	}
}

func TestParseBundleFile(t *testing.T) {
	a := verifytest.NewIssuer(t, jwa.EdDSA)
	set, _ := keys.Bundle(false, a.Key())
	signed, err := keys.SignBundle(a.Signer(), set, verifytest.T0, verifytest.T0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	f, err := parseBundleFile(append(append([]byte("\n "), signed...), '\n'), false)
	if err != nil || f.signed == nil || f.signed.Kid != a.KeyID() || len(f.keys) != 1 {
		t.Fatalf("signed bundle with whitespace around: %+v %v", f, err)
	}
	raw, _ := jsonOf(set)
	for name, in := range map[string][]byte{
		"empty":             nil,
		"not a bundle":      []byte("hello"),
		"empty set":         []byte(`{"keys":[]}`),
		"HS256 not allowed": []byte(`{"keys":[{"kty":"oct","kid":"h","alg":"HS256","k":"` + strings.Repeat("A", 43) + `"}]}`),
		"too large":         append(raw, make([]byte, MaxTrustBundleBytes)...),
		"signed, broken":    signed[:len(signed)/2],
	} {
		if _, err := parseBundleFile(in, false); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
	_, err = parseBundleFile([]byte("x.y.z"), false)
	if !errors.Is(err, verify.ErrBadSignedBundle) {
		t.Errorf("a broken signed bundle: %v", err)
	}
}

// FuzzParseBundleFile: no panic on any file; a parsed file has 1..64 keys,
// sorted, distinct, each with a thumbprint of 43 characters.
func FuzzParseBundleFile(f *testing.F) {
	var seed [32]byte
	copy(seed[:], "fencegate-proxy-trust-file-fuzz!")
	a := verifytest.NewEd25519IssuerFromSeed(f, seed, "fuzz-a")
	set, _ := keys.Bundle(false, a.Key())
	raw, _ := jsonOf(set)
	signed, _ := keys.SignBundle(a.Signer(), set, verifytest.T0, verifytest.T0.Add(time.Hour))
	for _, s := range [][]byte{raw, signed, append([]byte(" "), signed...), []byte(`{"keys":[{}]}`), []byte("a.b.c"), []byte(`{`)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		bf, err := parseBundleFile(in, true)
		if err != nil {
			return
		}
		if len(bf.keys) < 1 || len(bf.keys) > store.MaxTrustedKeys {
			t.Fatalf("%d keys", len(bf.keys))
		}
		for i, k := range bf.keys {
			if len(k.thumbprint) != store.ThumbprintLen || k.kid == "" || i > 0 && bf.keys[i-1].kid >= k.kid {
				t.Fatalf("key %d: %+v", i, k)
			}
		}
	})
}

func jsonOf(v any) ([]byte, error) { return json.Marshal(v) }
