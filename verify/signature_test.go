package verify_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/lestrrat-go/jwx/v2/jws"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/verify"
	"github.com/fencegate/fencegate/verify/verifytest"
)

// withSignature keeps the header and payload of tok and puts sig in as its
// signature segment.
func withSignature(tok, sig []byte) []byte {
	i := bytes.LastIndexByte(tok, '.')
	return append(bytes.Clone(tok[:i+1]), enc.EncodeToString(sig)...)
}

// agreesWithJWS fails t when ParseAndVerifyGrant and jws.Verify (with the
// issuer's own key and alg) disagree on whether the signature of tok
// verifies. tok's header and payload are a valid grant's, so verify's
// only possible failure is the signature.
func agreesWithJWS(t *testing.T, is *verifytest.Issuer, key any, bundle *verify.Bundle, tok []byte) {
	t.Helper()
	_, _, err := verify.ParseAndVerifyGrant(tok, bundle)
	if err != nil && !errors.Is(err, verify.ErrBadSignature) {
		t.Fatalf("%s: a valid grant with another signature is refused for %v, not for its signature", is.Alg(), err)
	}
	_, jerr := jws.Verify(tok, jws.WithKey(is.Alg(), key), jws.WithCompact())
	if (err == nil) != (jerr == nil) {
		t.Fatalf("%s: verify says %v, jws.Verify says %v, for %s", is.Alg(), err, jerr, tok)
	}
}

// TestSignatureAgreesWithJWS: verify checks signatures itself on the
// segments it has split (no second parse by jwx); for every algorithm its
// answer must be jws.Verify's, on valid signatures and on broken ones
// (truncated, extended, a bit flipped, empty, another token's, an ES256
// signature of the wrong length).
func TestSignatureAgreesWithJWS(t *testing.T) {
	k := newFuzzKeys(t)
	for _, is := range []*verifytest.Issuer{k.ed, k.es, k.hs} {
		key := rawKey(t, is)
		tok := is.Sign(is.Grant())
		other := is.Sign(is.Grant(func(g *fencegate.Grant) { g.FenceToken++ }))
		sig, err := enc.DecodeString(string(tok[bytes.LastIndexByte(tok, '.')+1:]))
		if err != nil {
			t.Fatal(err)
		}
		otherSig, _ := enc.DecodeString(string(other[bytes.LastIndexByte(other, '.')+1:]))
		flipped := bytes.Clone(sig)
		flipped[len(flipped)/2] ^= 0x10
		cases := map[string][]byte{
			"valid":      sig,
			"truncated":  sig[:len(sig)-1],
			"extended":   append(bytes.Clone(sig), 0),
			"flipped":    flipped,
			"empty":      nil,
			"other":      otherSig,
			"zeros":      make([]byte, len(sig)),
			"half":       sig[:len(sig)/2],
			"doubled":    append(bytes.Clone(sig), sig...),
			"zero-r-s":   make([]byte, 64),
			"one-byte-r": append([]byte{1}, make([]byte, 63)...),
		}
		for name, s := range cases {
			t.Run(string(is.Alg())+"/"+name, func(t *testing.T) {
				agreesWithJWS(t, is, key, k.bundle, withSignature(tok, s))
			})
		}
		if _, _, err := verify.ParseAndVerifyGrant(withSignature(tok, sig), k.bundle); err != nil {
			t.Fatalf("%s: a valid grant is refused: %v", is.Alg(), err)
		}
	}
}

// FuzzSignatureAgreesWithJWS puts arbitrary signature bytes behind a valid
// grant of each algorithm: verify and jws.Verify must agree.
func FuzzSignatureAgreesWithJWS(f *testing.F) {
	k := newFuzzKeys(f)
	issuers := []*verifytest.Issuer{k.ed, k.es, k.hs}
	toks := make([][]byte, len(issuers))
	keys := make([]any, len(issuers))
	for i, is := range issuers {
		toks[i] = is.Sign(is.Grant())
		keys[i] = rawKey(f, is)
		sig, _ := enc.DecodeString(string(toks[i][bytes.LastIndexByte(toks[i], '.')+1:]))
		f.Add(uint8(i), sig)
		f.Add(uint8(i), sig[1:])
	}
	f.Fuzz(func(t *testing.T, which uint8, sig []byte) {
		i := int(which) % len(issuers)
		agreesWithJWS(t, issuers[i], keys[i], k.bundle, withSignature(toks[i], sig))
	})
}
