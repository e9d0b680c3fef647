package verify

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"fmt"
	"slices"
	"strings"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"

	"github.com/fencegate/fencegate"
)

// DefaultAlgorithms returns the allow-list NewBundle uses when none is
// given: EdDSA (Ed25519) and ES256 (P-256). HS256 is never allowed by
// default: a bundle holding an HS256 secret can forge grants, so it must be
// opted into explicitly by passing jwa.HS256 to NewBundle.
func DefaultAlgorithms() []jwa.SignatureAlgorithm { return algorithms(fencegate.DefaultAlgorithms()) }

// AllowList returns the allow-list of a verifier: DefaultAlgorithms, and
// HS256 only when allowHS256 is set (a bundle holding an HS256 secret can
// forge grants).
func AllowList(allowHS256 bool) []jwa.SignatureAlgorithm {
	algs := DefaultAlgorithms()
	if allowHS256 {
		algs = append(algs, jwa.SignatureAlgorithm(fencegate.AlgHS256))
	}
	return algs
}

func algorithms(names []string) []jwa.SignatureAlgorithm {
	out := make([]jwa.SignatureAlgorithm, len(names))
	for i, n := range names {
		out[i] = jwa.SignatureAlgorithm(n)
	}
	return out
}

// MinHMACKeyBytes is the shortest HS256 secret a bundle accepts.
const MinHMACKeyBytes = 32

// Bundle is an immutable trust bundle: verification keys indexed by kid,
// each bound to exactly one algorithm, and the algorithm allow-list. Reload
// a bundle by building a new one with NewBundle and swapping the pointer;
// a *Bundle is safe for concurrent use.
type Bundle struct {
	allowed []jwa.SignatureAlgorithm
	keys    map[string]bundleKey
	kids    []string
}

type bundleKey struct {
	alg jwa.SignatureAlgorithm
	// raw is the key checkSignature uses, decoded once when the bundle is
	// built (never per check): ed25519.PublicKey, *ecdsa.PublicKey or
	// a private copy of the HS256 secret.
	raw any
}

// NewBundle builds a trust bundle from a JWK set and an explicit algorithm
// allow-list. With no algorithms given, DefaultAlgorithms (EdDSA, ES256) is
// used; HS256 is accepted only when passed explicitly. Only EdDSA, ES256 and
// HS256 can be allowed at all.
//
// Every key must have a non-empty kid that is unique in the set, an "alg"
// that is in the allow-list and fits the key: EdDSA for an OKP Ed25519 key,
// ES256 for an EC P-256 key, HS256 for an oct key of at least
// MinHMACKeyBytes bytes. A "use" member, when present, must be "sig".
// Private asymmetric keys are reduced to their public half; nothing of the
// set is retained, so later changes to it do not affect the bundle. An empty
// set is refused. Errors wrap ErrBadBundle (and ErrAlgNotAllowed for an alg
// outside the allow-list).
func NewBundle(set jwk.Set, allowed ...jwa.SignatureAlgorithm) (*Bundle, error) {
	if len(allowed) == 0 {
		allowed = DefaultAlgorithms()
	}
	b := &Bundle{keys: make(map[string]bundleKey)}
	for _, a := range allowed {
		if !slices.Contains(fencegate.Algorithms(), a.String()) {
			return nil, fmt.Errorf("%w: %w: %q cannot be allowed (only %s)", ErrBadBundle, ErrAlgNotAllowed, a.String(), strings.Join(fencegate.Algorithms(), ", "))
		}
		if !slices.Contains(b.allowed, a) {
			b.allowed = append(b.allowed, a)
		}
	}
	if set == nil || set.Len() == 0 {
		return nil, fmt.Errorf("%w: no keys", ErrBadBundle)
	}
	ctx := context.Background()
	for it := set.Keys(ctx); it.Next(ctx); {
		key, ok := it.Pair().Value.(jwk.Key)
		if !ok {
			return nil, fmt.Errorf("%w: set member is not a key", ErrBadBundle)
		}
		kid := key.KeyID()
		if kid == "" {
			return nil, fmt.Errorf("%w: key without kid", ErrBadBundle)
		}
		if _, dup := b.keys[kid]; dup {
			return nil, fmt.Errorf("%w: duplicate kid %q", ErrBadBundle, kid)
		}
		bk, err := b.trustKey(key)
		if err != nil {
			return nil, fmt.Errorf("%w: kid %q: %w", ErrBadBundle, kid, err)
		}
		b.keys[kid] = bk
		b.kids = append(b.kids, kid)
	}
	slices.Sort(b.kids)
	return b, nil
}

func (b *Bundle) trustKey(key jwk.Key) (bundleKey, error) {
	algName := ""
	if a := key.Algorithm(); a != nil {
		algName = a.String()
	}
	if algName == "" {
		return bundleKey{}, fmt.Errorf("key without alg")
	}
	var alg jwa.SignatureAlgorithm
	for _, a := range b.allowed {
		if a.String() == algName {
			alg = a
		}
	}
	if alg == "" {
		return bundleKey{}, fmt.Errorf("%w: %q", ErrAlgNotAllowed, algName)
	}
	if use := key.KeyUsage(); use != "" && use != string(jwk.ForSignature) {
		return bundleKey{}, fmt.Errorf("use %q, want %q", use, jwk.ForSignature)
	}

	if key.KeyType() == jwa.OctetSeq {
		sk, ok := key.(jwk.SymmetricKey)
		if !ok || alg != jwa.HS256 {
			return bundleKey{}, fmt.Errorf("alg %s does not fit an oct key", alg)
		}
		octets := sk.Octets()
		if len(octets) < MinHMACKeyBytes {
			return bundleKey{}, fmt.Errorf("HS256 secret of %d bytes, want at least %d", len(octets), MinHMACKeyBytes)
		}
		return bundleKey{alg: alg, raw: slices.Clone(octets)}, nil
	}

	pub, err := jwk.PublicKeyOf(key)
	if err != nil {
		return bundleKey{}, fmt.Errorf("public key: %w", err)
	}
	switch pk := pub.(type) {
	case jwk.OKPPublicKey:
		if alg != jwa.EdDSA || pk.Crv() != jwa.Ed25519 {
			return bundleKey{}, fmt.Errorf("alg %s does not fit an OKP %s key", alg, pk.Crv())
		}
		if len(pk.X()) != ed25519.PublicKeySize {
			return bundleKey{}, fmt.Errorf("Ed25519 key of %d bytes", len(pk.X()))
		}
		return bundleKey{alg: alg, raw: ed25519.PublicKey(slices.Clone(pk.X()))}, nil
	case jwk.ECDSAPublicKey:
		if alg != jwa.ES256 || pk.Crv() != jwa.P256 {
			return bundleKey{}, fmt.Errorf("alg %s does not fit an EC %s key", alg, pk.Crv())
		}
		var raw any
		if err := pk.Raw(&raw); err != nil {
			return bundleKey{}, fmt.Errorf("EC key: %w", err)
		}
		ecPub, ok := raw.(*ecdsa.PublicKey)
		if !ok {
			return bundleKey{}, fmt.Errorf("EC key: unexpected raw type %T", raw)
		}
		if _, err := ecPub.ECDH(); err != nil {
			return bundleKey{}, fmt.Errorf("EC key: %w", err)
		}
		return bundleKey{alg: alg, raw: ecPub}, nil
	default:
		return bundleKey{}, fmt.Errorf("alg %s does not fit a %s key", alg, key.KeyType())
	}
}

// KeyIDs returns the kids of the bundle, sorted.
func (b *Bundle) KeyIDs() []string { return slices.Clone(b.kids) }

// Algorithms returns the bundle's algorithm allow-list.
func (b *Bundle) Algorithms() []jwa.SignatureAlgorithm { return slices.Clone(b.allowed) }

// algAllowed reports whether the header alg name is in the allow-list.
func (b *Bundle) algAllowed(name string) bool {
	for _, a := range b.allowed {
		if a.String() == name {
			return true
		}
	}
	return false
}
