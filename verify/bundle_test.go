package verify_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/x25519"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/keys"
	"github.com/fencegate/fencegate/verify"
	"github.com/fencegate/fencegate/verify/verifytest"
)

func genKey(t *testing.T, alg jwa.SignatureAlgorithm) jwk.Key {
	t.Helper()
	k, err := keys.Generate(alg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func rawJWK(t testing.TB, raw any, kid string, alg jwa.KeyAlgorithm) jwk.Key {
	t.Helper()
	k, err := jwk.FromRaw(raw)
	if err != nil {
		t.Fatal(err)
	}
	if kid != "" {
		if err := k.Set(jwk.KeyIDKey, kid); err != nil {
			t.Fatal(err)
		}
	}
	if alg != nil {
		if err := k.Set(jwk.AlgorithmKey, alg); err != nil {
			t.Fatal(err)
		}
	}
	return k
}

func setOf(t *testing.T, ks ...jwk.Key) jwk.Set {
	t.Helper()
	set := jwk.NewSet()
	for _, k := range ks {
		if err := set.AddKey(k); err != nil {
			t.Fatal(err)
		}
	}
	return set
}

func with(t *testing.T, k jwk.Key, name string, v any) jwk.Key {
	t.Helper()
	c, err := k.Clone()
	if err != nil {
		t.Fatal(err)
	}
	if v == nil {
		if err := c.Remove(name); err != nil {
			t.Fatal(err)
		}
	} else if err := c.Set(name, v); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNewBundleRejects(t *testing.T) {
	ed, ed2, es, hs := genKey(t, jwa.EdDSA), genKey(t, jwa.EdDSA), genKey(t, jwa.ES256), genKey(t, jwa.HS256)
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	_, xPriv, err := x25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		msg     string
		set     jwk.Set
		allowed []jwa.SignatureAlgorithm
		also    error
	}{
		{name: "nil set", msg: "no keys", set: nil},
		{name: "empty set", msg: "no keys", set: jwk.NewSet()},
		{name: "missing kid", msg: "without kid", set: setOf(t, with(t, ed, jwk.KeyIDKey, nil))},
		{name: "missing alg", msg: "without alg", set: setOf(t, with(t, ed, jwk.AlgorithmKey, nil))},
		{name: "duplicate kid", msg: "duplicate kid", set: setOf(t, ed, with(t, ed2, jwk.KeyIDKey, ed.KeyID()))},
		{name: "HS256 key with the default allow-list", msg: "not allowed", set: setOf(t, ed, hs), also: verify.ErrAlgNotAllowed},
		{name: "ES256 key when only EdDSA is allowed", msg: "not allowed", set: setOf(t, es), allowed: []jwa.SignatureAlgorithm{jwa.EdDSA}, also: verify.ErrAlgNotAllowed},
		{name: "alg none on a key", msg: "not allowed", set: setOf(t, with(t, ed, jwk.AlgorithmKey, jwa.NoSignature)), also: verify.ErrAlgNotAllowed},
		{name: "RS256 cannot be allowed", msg: "cannot be allowed", set: setOf(t, ed), allowed: []jwa.SignatureAlgorithm{jwa.EdDSA, jwa.RS256}, also: verify.ErrAlgNotAllowed},
		{name: "none cannot be allowed", msg: "cannot be allowed", set: setOf(t, ed), allowed: []jwa.SignatureAlgorithm{jwa.NoSignature}, also: verify.ErrAlgNotAllowed},
		{name: "EdDSA alg on an EC key", msg: "does not fit", set: setOf(t, with(t, es, jwk.AlgorithmKey, jwa.EdDSA))},
		{name: "ES256 alg on an OKP key", msg: "does not fit", set: setOf(t, with(t, ed, jwk.AlgorithmKey, jwa.ES256))},
		{name: "HS256 alg on an EC key", msg: "does not fit", set: setOf(t, with(t, es, jwk.AlgorithmKey, jwa.HS256)), allowed: []jwa.SignatureAlgorithm{jwa.ES256, jwa.HS256}},
		{name: "EdDSA alg on an oct key", msg: "does not fit", set: setOf(t, with(t, hs, jwk.AlgorithmKey, jwa.EdDSA))},
		{name: "ES256 alg on a P-384 key", msg: "does not fit", set: setOf(t, rawJWK(t, p384, "p384", jwa.ES256))},
		{name: "EdDSA alg on an X25519 key", msg: "does not fit", set: setOf(t, rawJWK(t, xPriv, "x25519", jwa.EdDSA))},
		{name: "EdDSA alg on an RSA key", msg: "does not fit", set: setOf(t, rawJWK(t, rsaKey, "rsa", jwa.EdDSA))},
		{name: "RS256 alg on an RSA key", msg: "not allowed", set: setOf(t, rawJWK(t, rsaKey, "rsa", jwa.RS256)), also: verify.ErrAlgNotAllowed},
		{name: "HS256 secret of 16 bytes", msg: "at least 32", set: setOf(t, rawJWK(t, make([]byte, 16), "short", jwa.HS256)), allowed: []jwa.SignatureAlgorithm{jwa.HS256}},
		{name: "use enc", msg: "use \"enc\"", set: setOf(t, with(t, ed, jwk.KeyUsageKey, jwk.ForEncryption))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := verify.NewBundle(tc.set, tc.allowed...)
			if b != nil || !errors.Is(err, verify.ErrBadBundle) {
				t.Fatalf("got %v, %v; want ErrBadBundle", b, err)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("%v does not say %q", err, tc.msg)
			}
			if tc.also != nil && !errors.Is(err, tc.also) {
				t.Fatalf("%v does not wrap %v", err, tc.also)
			}
		})
	}
}

func TestNewBundleAccepts(t *testing.T) {
	// Private keys straight from keys.Generate: reduced to public halves.
	edIs, esIs, hsIs := verifytest.NewIssuer(t, jwa.EdDSA), verifytest.NewIssuer(t, jwa.ES256), verifytest.NewIssuer(t, jwa.HS256)
	set := setOf(t, edIs.Key(), esIs.Key())
	b, err := verify.NewBundle(set)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{edIs.KeyID(), esIs.KeyID()}
	slices.Sort(want)
	if got := b.KeyIDs(); !slices.Equal(got, want) {
		t.Fatalf("KeyIDs = %v, want %v", got, want)
	}
	if got := b.Algorithms(); !slices.Equal(got, []jwa.SignatureAlgorithm{jwa.EdDSA, jwa.ES256}) {
		t.Fatalf("default Algorithms = %v", got)
	}
	for _, is := range []*verifytest.Issuer{edIs, esIs} {
		if _, _, err := verify.ParseAndVerifyGrant(is.Sign(is.Grant()), b); err != nil {
			t.Fatalf("%s: %v", is.Alg(), err)
		}
	}

	// Immutable: changing the set or the returned slices changes nothing.
	b.KeyIDs()[0] = "x"
	if err := set.RemoveKey(edIs.Key()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := verify.ParseAndVerifyGrant(edIs.Sign(edIs.Grant()), b); err != nil {
		t.Fatalf("after changing the set: %v", err)
	}
	if got := b.KeyIDs(); !slices.Equal(got, want) {
		t.Fatalf("KeyIDs after changes = %v", got)
	}

	// HS256 only when allowed explicitly; then it verifies.
	hsSet := setOf(t, hsIs.Key())
	if _, err := verify.NewBundle(hsSet); !errors.Is(err, verify.ErrAlgNotAllowed) {
		t.Fatalf("HS256 with default allow-list: %v", err)
	}
	hb, err := verify.NewBundle(hsSet, jwa.HS256)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := verify.ParseAndVerifyGrant(hsIs.Sign(hsIs.Grant()), hb); err != nil {
		t.Fatal(err)
	}
	// The HS256-only bundle refuses EdDSA tokens by alg.
	_, _, err = verify.ParseAndVerifyGrant(edIs.Sign(edIs.Grant()), hb)
	wantErr(t, err, fencegate.CodeGrantInvalid, verify.ErrAlgNotAllowed)

	// A published (public) bundle from package keys works too.
	pub, err := keys.Bundle(false, edIs.Key(), esIs.Key(), hsIs.Key())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := verify.NewBundle(pub); err != nil {
		t.Fatal(err)
	}
}
