package keys

import (
	"encoding/json"
	"fmt"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jws"
)

// Signer signs claim sets as compact JWS with one key. The protected header
// carries alg, kid and typ (the schema name), so a status proof can never be
// mistaken for a grant.
type Signer struct {
	key jwk.Key
	alg jwa.SignatureAlgorithm
	// raw is key converted once (ed25519.PrivateKey, *ecdsa.PrivateKey,
	// []byte): signing with the jwk.Key would convert it on every
	// signature, about half of an EdDSA signature's cost.
	raw any
	// compact builds EdDSA and HS256 tokens without jwx (compact.go).
	compact *compactSigner
}

// NewSigner returns a Signer for a private key loaded by LoadSigningKey or made by Generate.
func NewSigner(key jwk.Key) (*Signer, error) {
	if err := checkSigningKey(key); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadKey, err)
	}
	alg, _ := ParseAlg(key.Algorithm().String())
	var raw any
	if err := key.Raw(&raw); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadKey, err)
	}
	return &Signer{key: key, alg: alg, raw: raw, compact: &compactSigner{alg: alg, raw: raw, kid: key.KeyID()}}, nil
}

// KeyID is the kid put in every header.
func (s *Signer) KeyID() string { return s.key.KeyID() }

// Alg is the signing algorithm.
func (s *Signer) Alg() jwa.SignatureAlgorithm { return s.alg }

// Key is the private signing key.
func (s *Signer) Key() jwk.Key { return s.key }

// Sign marshals claims to JSON and signs them with typ in the protected header.
func (s *Signer) Sign(typ string, claims any) ([]byte, error) {
	payload, err := json.Marshal(claims)
	if err != nil {
		return nil, fmt.Errorf("keys: encode claims: %w", err)
	}
	return s.SignPayload(typ, payload)
}

// SignPayload signs payload bytes as they are. Tests use it to build
// malformed tokens with a real signature.
func (s *Signer) SignPayload(typ string, payload []byte) ([]byte, error) {
	if tok, ok := s.compact.sign(typ, payload); ok {
		return tok, nil
	}
	return s.signJWX(typ, payload)
}

// signJWX is SignPayload through jwx.
func (s *Signer) signJWX(typ string, payload []byte) ([]byte, error) {
	hdr := jws.NewHeaders()
	if err := hdr.Set(jws.KeyIDKey, s.key.KeyID()); err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	if err := hdr.Set(jws.TypeKey, typ); err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	tok, err := jws.Sign(payload, jws.WithKey(s.alg, s.raw, jws.WithProtectedHeaders(hdr)))
	if err != nil {
		return nil, fmt.Errorf("keys: sign: %w", err)
	}
	return tok, nil
}
