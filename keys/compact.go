package keys

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"sync"

	"github.com/lestrrat-go/jwx/v2/jwa"
)

// The registry signs a grant and two status proofs per acquire and
// release, and jwx's generic path (headers as a map, reflection, buffers)
// cost about a third of an EdDSA signature besides the signature itself.
// For the deterministic algorithms, EdDSA and HS256, a Signer builds the
// compact JWS itself: the protected header is the JSON jwx writes for
// {alg, kid, typ} (keys in that order), made once per typ, then
// base64url(header) "." base64url(payload), signed, "." base64url(sig).
// The bytes are jwx's own (TestCompactMatchesJWX compares them). ES256
// signatures are randomized and stay with jwx, as does a kid or typ with
// a character JSON would escape.

var b64 = base64.RawURLEncoding

// compactSigner signs with raw for alg, or reports ok=false when the
// Signer must use jwx.
type compactSigner struct {
	alg jwa.SignatureAlgorithm
	raw any
	kid string
	// headers caches base64url(protected header) by typ.
	headers sync.Map
}

// plain reports whether s needs no escaping inside a JSON string.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// header returns base64url of the protected header for typ, or false.
func (c *compactSigner) header(typ string) (string, bool) {
	if h, ok := c.headers.Load(typ); ok {
		return h.(string), true
	}
	if !plain(typ) || !plain(c.kid) {
		return "", false
	}
	h := b64.EncodeToString([]byte(`{"alg":"` + c.alg.String() + `","kid":"` + c.kid + `","typ":"` + typ + `"}`))
	c.headers.Store(typ, h)
	return h, true
}

// sign returns the compact JWS of payload, or ok=false.
func (c *compactSigner) sign(typ string, payload []byte) ([]byte, bool) {
	if c.alg != jwa.EdDSA && c.alg != jwa.HS256 {
		return nil, false
	}
	h, ok := c.header(typ)
	if !ok {
		return nil, false
	}
	n := len(h) + 1 + b64.EncodedLen(len(payload))
	tok := make([]byte, n, n+1+b64.EncodedLen(64))
	copy(tok, h)
	tok[len(h)] = '.'
	b64.Encode(tok[len(h)+1:], payload)
	var sig []byte
	switch k := c.raw.(type) {
	case ed25519.PrivateKey:
		if c.alg != jwa.EdDSA {
			return nil, false
		}
		sig = ed25519.Sign(k, tok)
	case []byte:
		if c.alg != jwa.HS256 {
			return nil, false
		}
		m := hmac.New(sha256.New, k)
		m.Write(tok)
		sig = m.Sum(nil)
	default:
		return nil, false
	}
	tok = append(tok, '.')
	return b64.AppendEncode(tok, sig), true
}
