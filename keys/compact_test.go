package keys

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jws"

	"github.com/fencegate/fencegate"
)

// TestCompactMatchesJWX is the differential test of the compact signer:
// for EdDSA and HS256 (deterministic signatures), every token it builds is
// byte for byte the token jwx builds for the same typ and payload, for
// the schemas, random payloads (empty included) and a typ with characters
// JSON escapes (which falls back to jwx); ES256 tokens, randomized, verify.
func TestCompactMatchesJWX(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 1))
	typs := []string{fencegate.GrantSchema, fencegate.StatusSchema, "a<b>&\"c\\", "t\x01"}
	for _, alg := range []jwa.SignatureAlgorithm{jwa.EdDSA, jwa.HS256, jwa.ES256} {
		k, err := Generate(alg, nil)
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewSigner(k)
		if err != nil {
			t.Fatal(err)
		}
		pub, err := TrustKey(k)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 300 {
			payload := make([]byte, r.IntN(700))
			for j := range payload {
				payload[j] = byte(r.IntN(256))
			}
			if i == 0 {
				payload = nil
			}
			typ := typs[i%len(typs)]
			got, err := s.SignPayload(typ, payload)
			if err != nil {
				t.Fatalf("%s: %v", alg, err)
			}
			if alg != jwa.ES256 {
				want, err := s.signJWX(typ, payload)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("%s typ %q: compact\n%s\njwx\n%s", alg, typ, got, want)
				}
			}
			msg, err := jws.Parse(got)
			if err != nil {
				t.Fatal(err)
			}
			h := msg.Signatures()[0].ProtectedHeaders()
			if h.KeyID() != k.KeyID() || h.Type() != typ || h.Algorithm() != alg {
				t.Fatalf("%s: header %s/%s/%s", alg, h.KeyID(), h.Type(), h.Algorithm())
			}
			verified, err := jws.Verify(got, jws.WithKey(alg, pub))
			if err != nil || !bytes.Equal(verified, payload) {
				t.Fatalf("%s: verify: %v", alg, err)
			}
		}
	}
}

// BenchmarkSign compares a grant-sized EdDSA signature through the compact
// signer and through jwx:
//
//	go test -run '^$' -bench Sign -benchtime 2s ./keys/
func BenchmarkSign(b *testing.B) {
	k, err := Generate(jwa.EdDSA, nil)
	if err != nil {
		b.Fatal(err)
	}
	s, err := NewSigner(k)
	if err != nil {
		b.Fatal(err)
	}
	payload := bytes.Repeat([]byte("x"), 420)
	for name, sign := range map[string]func(string, []byte) ([]byte, error){"compact": s.SignPayload, "jwx": s.signJWX} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := sign(fencegate.GrantSchema, payload); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
