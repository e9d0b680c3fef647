package verify

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"math/big"

	"github.com/lestrrat-go/jwx/v2/jwa"
)

// es256Size is the size of an ES256 signature: r and s, 32 bytes each,
// big-endian (RFC 7518 section 3.4). No other length is accepted.
const es256Size = 64

// checkSignature reports whether sig is key's signature of input, the JWS
// signing input (the header and payload segments joined by a dot, as they
// appear in the token). It is what jws.Verify does with one key and one
// alg, on the segments verifyCompact has already split and decoded, so the
// token is not parsed a second time (by jwx) after the strict parse.
// verify/signature_test.go checks that it agrees with jws.Verify.
//
// The key's alg was fixed when the bundle was built and the header alg has
// been checked against it; a key of a type its alg does not fit cannot
// occur and is refused.
func checkSignature(key bundleKey, input, sig []byte) bool {
	switch key.alg {
	case jwa.EdDSA:
		pub, ok := key.raw.(ed25519.PublicKey)
		// ed25519.Verify panics on a key of another size; NewBundle
		// admits only 32-byte keys, checked again here.
		return ok && len(pub) == ed25519.PublicKeySize && ed25519.Verify(pub, input, sig)
	case jwa.ES256:
		pub, ok := key.raw.(*ecdsa.PublicKey)
		if !ok || len(sig) != es256Size {
			return false
		}
		h := sha256.Sum256(input)
		r := new(big.Int).SetBytes(sig[:es256Size/2])
		s := new(big.Int).SetBytes(sig[es256Size/2:])
		return ecdsa.Verify(pub, h[:], r, s)
	case jwa.HS256:
		secret, ok := key.raw.([]byte)
		if !ok || len(secret) < MinHMACKeyBytes {
			return false
		}
		m := hmac.New(sha256.New, secret)
		m.Write(input)
		return hmac.Equal(m.Sum(nil), sig)
	}
	return false
}
