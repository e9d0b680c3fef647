package keys

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"

	"github.com/fencegate/fencegate"
)

// ParseAlg maps an algorithm name to a supported algorithm (one of
// fencegate.Algorithms).
func ParseAlg(name string) (jwa.SignatureAlgorithm, error) {
	if slices.Contains(fencegate.Algorithms(), name) {
		return jwa.SignatureAlgorithm(name), nil
	}
	return "", fmt.Errorf("%w: %q (want %s)", ErrUnsupportedAlg, name, strings.Join(fencegate.Algorithms(), ", "))
}

// Generate creates a new private signing key for alg, reading randomness
// from r (crypto/rand.Reader when nil). The kid is the key's RFC 7638
// thumbprint, so it is stable and unique per key.
func Generate(alg jwa.SignatureAlgorithm, r io.Reader) (jwk.Key, error) {
	if r == nil {
		r = rand.Reader
	}
	var raw any
	switch alg {
	case jwa.EdDSA:
		_, priv, err := ed25519.GenerateKey(r)
		if err != nil {
			return nil, fmt.Errorf("keys: generate Ed25519: %w", err)
		}
		raw = priv
	case jwa.ES256:
		priv, err := ecdsa.GenerateKey(elliptic.P256(), r)
		if err != nil {
			return nil, fmt.Errorf("keys: generate P-256: %w", err)
		}
		raw = priv
	case jwa.HS256:
		secret := make([]byte, 32)
		if _, err := io.ReadFull(r, secret); err != nil {
			return nil, fmt.Errorf("keys: generate HS256 secret: %w", err)
		}
		raw = secret
	default:
		return nil, fmt.Errorf("%w: %q", ErrUnsupportedAlg, alg)
	}
	key, err := jwk.FromRaw(raw)
	if err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	if err := key.Set(jwk.AlgorithmKey, alg); err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	if err := jwk.AssignKeyID(key); err != nil {
		return nil, fmt.Errorf("keys: assign kid: %w", err)
	}
	if alg != jwa.HS256 {
		if err := key.Set(jwk.KeyUsageKey, jwk.ForSignature); err != nil {
			return nil, fmt.Errorf("keys: %w", err)
		}
	}
	return key, nil
}

// IsSymmetric reports whether key is a shared secret (HS256).
func IsSymmetric(key jwk.Key) bool { return key.KeyType() == "oct" }

// TrustKey returns what a verifier needs of key: the public half of an
// asymmetric key, or the secret itself for HS256. kid and alg are kept.
func TrustKey(key jwk.Key) (jwk.Key, error) {
	if IsSymmetric(key) {
		return key, nil
	}
	pub, err := jwk.PublicKeyOf(key)
	if err != nil {
		return nil, fmt.Errorf("keys: public key of %q: %w", key.KeyID(), err)
	}
	return pub, nil
}

// Bundle builds a trust bundle from signing or trust keys. With
// includeSecrets false, HS256 keys are left out: the result is safe to
// publish.
func Bundle(includeSecrets bool, ks ...jwk.Key) (jwk.Set, error) {
	set := jwk.NewSet()
	for _, k := range ks {
		if IsSymmetric(k) && !includeSecrets {
			continue
		}
		tk, err := TrustKey(k)
		if err != nil {
			return nil, err
		}
		if _, dup := set.LookupKeyID(tk.KeyID()); dup {
			continue
		}
		if err := set.AddKey(tk); err != nil {
			return nil, fmt.Errorf("keys: %w", err)
		}
	}
	return set, nil
}

// Save writes key as JSON to path with mode 0600 (it is private material).
func Save(path string, v any) error {
	buf, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("keys: encode %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(buf, '\n'), 0o600); err != nil {
		return fmt.Errorf("keys: write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	return nil
}

// LoadSigningKey reads a private JWK from path and checks that it can sign:
// a private key (or secret) with kid and a supported alg that fits its type.
func LoadSigningKey(path string) (jwk.Key, error) {
	buf, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	key, err := jwk.ParseKey(buf)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadKey, path, err)
	}
	if err := checkSigningKey(key); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadKey, path, err)
	}
	return key, nil
}

func checkSigningKey(key jwk.Key) error {
	if key.KeyID() == "" {
		return fmt.Errorf("no kid")
	}
	alg, err := ParseAlg(key.Algorithm().String())
	if err != nil {
		return err
	}
	switch k := key.(type) {
	case jwk.OKPPrivateKey:
		if alg != jwa.EdDSA || k.Crv() != jwa.Ed25519 {
			return fmt.Errorf("alg %s does not fit an OKP key", alg)
		}
	case jwk.ECDSAPrivateKey:
		if alg != jwa.ES256 || k.Crv() != jwa.P256 {
			return fmt.Errorf("alg %s does not fit an EC key", alg)
		}
	case jwk.SymmetricKey:
		if alg != jwa.HS256 || len(k.Octets()) < 32 {
			return fmt.Errorf("HS256 needs alg HS256 and a secret of at least 32 bytes")
		}
	default:
		return fmt.Errorf("not a private key")
	}
	return nil
}

// LoadSet reads a JWK set (a trust bundle) from path.
func LoadSet(path string) (jwk.Set, error) {
	buf, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	set, err := jwk.Parse(buf)
	if err != nil {
		return nil, fmt.Errorf("keys: parse %s: %w", path, err)
	}
	return set, nil
}
