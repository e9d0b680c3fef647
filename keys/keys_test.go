package keys_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/keys"
	"github.com/fencegate/fencegate/verify"
)

func TestGenerateSaveLoadSignVerify(t *testing.T) {
	for _, name := range fencegate.Algorithms() {
		t.Run(name, func(t *testing.T) {
			alg, err := keys.ParseAlg(name)
			if err != nil {
				t.Fatal(err)
			}
			k, err := keys.Generate(alg, nil)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "signing.jwk")
			if err := keys.Save(path, k); err != nil {
				t.Fatal(err)
			}
			if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
				t.Fatalf("key file mode %v", fi.Mode().Perm())
			}
			loaded, err := keys.LoadSigningKey(path)
			if err != nil {
				t.Fatal(err)
			}
			s, err := keys.NewSigner(loaded)
			if err != nil {
				t.Fatal(err)
			}
			tok, err := s.Sign(fencegate.GrantSchema, map[string]string{"x": "y"})
			if err != nil {
				t.Fatal(err)
			}
			set, _ := keys.Bundle(true, loaded)
			b, err := verify.NewBundle(set, alg)
			if err != nil {
				t.Fatal(err)
			}
			// The payload is not a grant, so verification ends at the claims:
			// the signature itself was accepted.
			_, _, err = verify.ParseAndVerifyGrant(tok, b)
			if errors.Is(err, verify.ErrBadSignature) || errors.Is(err, verify.ErrUnknownKid) {
				t.Fatalf("signature not accepted: %v", err)
			}
		})
	}
}

func TestPublishedBundleHoldsNoSecrets(t *testing.T) {
	ed, _ := keys.Generate(jwa.EdDSA, nil)
	hs, _ := keys.Generate(jwa.HS256, nil)
	set, err := keys.Bundle(false, ed, hs)
	if err != nil {
		t.Fatal(err)
	}
	if set.Len() != 1 {
		t.Fatalf("published bundle has %d keys, want only the EdDSA one", set.Len())
	}
	k, _ := set.Key(0)
	if _, err := jwk.PublicKeyOf(k); err != nil {
		t.Fatal(err)
	}
	raw, _ := k.AsMap(t.Context())
	if _, private := raw["d"]; private {
		t.Fatal("the bundle holds the private key")
	}
}

func TestRotationBundle(t *testing.T) {
	old, _ := keys.Generate(jwa.EdDSA, nil)
	cur, _ := keys.Generate(jwa.ES256, nil)
	set, _ := keys.Bundle(false, old, cur, old)
	if set.Len() != 2 {
		t.Fatalf("rotation bundle has %d keys, want 2 (duplicates dropped)", set.Len())
	}
}

func TestLoadSigningKeyRefusesUnusableKeys(t *testing.T) {
	dir := t.TempDir()
	ed, _ := keys.Generate(jwa.EdDSA, nil)
	pub, _ := jwk.PublicKeyOf(ed)
	noKid, _ := keys.Generate(jwa.EdDSA, nil)
	noKid.Remove(jwk.KeyIDKey)
	wrongAlg, _ := keys.Generate(jwa.EdDSA, nil)
	wrongAlg.Set(jwk.AlgorithmKey, jwa.ES256)
	for name, k := range map[string]jwk.Key{"public": pub, "no kid": noKid, "alg does not fit": wrongAlg} {
		path := filepath.Join(dir, name)
		keys.Save(path, k)
		if _, err := keys.LoadSigningKey(path); !errors.Is(err, keys.ErrBadKey) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := keys.ParseAlg("none"); !errors.Is(err, keys.ErrUnsupportedAlg) {
		t.Fatalf("alg none: %v", err)
	}
}
