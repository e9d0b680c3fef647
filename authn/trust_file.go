package authn

import (
	"bytes"
	"crypto"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/lestrrat-go/jwx/v2/jwk"

	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/verify"
)

// MaxTrustBundleBytes bounds the trust bundle file: a larger file is
// refused before it is parsed.
const MaxTrustBundleBytes = 1 << 20

// bundleFile is the trust bundle file as read: a JWK set (RFC 7517), or a
// signed bundle (fencegate.BundleSchema) whose payload is one. Nothing in it
// is trusted by being in it: the sidecar verifies with the keys of the
// file that are pinned in the fenced store (trust.go).
type bundleFile struct {
	sum  [32]byte
	keys []fileKey // by kid
	// token is the signed bundle's JWS, signed its content as read
	// without authentication; both nil for a plain JWK set.
	token  []byte
	signed *verify.SignedBundle
	// all are the verification bundles of all the file's keys, by
	// allowHS, built once (keySet): a file is shared by every sidecar of
	// the process that reads the same bytes (trust_filecache.go).
	all [2]struct {
		once sync.Once
		b    *verify.Bundle
		err  error
	}
}

// keySet is keySet(keys, allowHS) for keys of f: the bundle of all of
// them is built once per file.
func (f *bundleFile) keySet(keys []fileKey, allowHS bool) (*verify.Bundle, error) {
	if len(keys) == 0 || len(keys) != len(f.keys) {
		return keySet(keys, allowHS)
	}
	for i := range keys {
		if keys[i].kid != f.keys[i].kid || keys[i].key != f.keys[i].key {
			return keySet(keys, allowHS)
		}
	}
	all := &f.all[0]
	if allowHS {
		all = &f.all[1]
	}
	all.once.Do(func() { all.b, all.err = keySet(f.keys, allowHS) })
	return all.b, all.err
}

// fileKey is one key of the file, with its RFC 7638 thumbprint.
type fileKey struct {
	kid, thumbprint, alg string
	key                  jwk.Key
}

// find returns the file's key kid.
func (f *bundleFile) find(kid string) (fileKey, bool) {
	i, ok := slices.BinarySearchFunc(f.keys, kid, func(k fileKey, kid string) int { return strings.Compare(k.kid, kid) })
	if !ok {
		return fileKey{}, false
	}
	return f.keys[i], true
}

// kids are the file's key IDs, sorted.
func (f *bundleFile) kids() []string {
	out := make([]string, len(f.keys))
	for i, k := range f.keys {
		out[i] = k.kid
	}
	return out
}

// readBundleFile reads and parses the trust bundle file (a file with the
// bytes of one parsed before is not parsed again: trust_filecache.go).
func readBundleFile(path string, allowHS bool) (*bundleFile, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("authn: trust bundle: %w", err)
	}
	defer fh.Close()
	raw, err := io.ReadAll(io.LimitReader(fh, MaxTrustBundleBytes+1))
	if err != nil {
		return nil, fmt.Errorf("authn: trust bundle: %w", err)
	}
	f, err := parsedBundles.parse(raw, allowHS)
	if err != nil {
		return nil, fmt.Errorf("authn: trust bundle %s: %w", path, err)
	}
	return f, nil
}

// parseBundleFile parses a trust bundle file: a JSON JWK set, or a signed
// bundle (a compact JWS; surrounding whitespace is ignored), decoded but
// not authenticated here. Every key must be one verify.NewBundle accepts
// (kid, alg in the allow-list and fitting the key, use "sig" if any), at
// most store.MaxTrustedKeys of them.
func parseBundleFile(raw []byte, allowHS bool) (*bundleFile, error) {
	if len(raw) > MaxTrustBundleBytes {
		return nil, fmt.Errorf("larger than %d bytes", MaxTrustBundleBytes)
	}
	f := &bundleFile{sum: sha256.Sum256(raw)}
	body := bytes.TrimSpace(raw)
	var set jwk.Set
	if len(body) > 0 && body[0] == '{' {
		var err error
		if set, err = jwk.Parse(body); err != nil {
			return nil, err
		}
	} else {
		sb, err := verify.ParseSignedBundleUnverified(body)
		if err != nil {
			return nil, fmt.Errorf("neither a JWK set nor a signed bundle: %w", err)
		}
		f.token, f.signed, set = body, sb, sb.Keys
	}
	if set.Len() > store.MaxTrustedKeys {
		return nil, fmt.Errorf("%d keys, at most %d", set.Len(), store.MaxTrustedKeys)
	}
	// NewBundle is the one judge of a usable key.
	if _, err := verify.NewBundle(set, verify.AllowList(allowHS)...); err != nil {
		return nil, err
	}
	for i := range set.Len() {
		k, _ := set.Key(i)
		tp, err := thumbprint(k)
		if err != nil {
			return nil, fmt.Errorf("kid %q: %w", k.KeyID(), err)
		}
		f.keys = append(f.keys, fileKey{kid: k.KeyID(), thumbprint: tp, alg: k.Algorithm().String(), key: k})
	}
	slices.SortFunc(f.keys, func(a, b fileKey) int { return strings.Compare(a.kid, b.kid) })
	return f, nil
}

// thumbprint is k's RFC 7638 JWK thumbprint (SHA-256, base64url without
// padding), computed by jwx over the public key (the secret for HS256).
func thumbprint(k jwk.Key) (string, error) {
	pub := k
	if _, sym := k.(jwk.SymmetricKey); !sym {
		var err error
		if pub, err = jwk.PublicKeyOf(k); err != nil {
			return "", err
		}
	}
	sum, err := pub.Thumbprint(crypto.SHA256)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(sum), nil
}

// keySet builds the verification bundle of keys (nil when there is none:
// every token is then refused with an unknown kid).
func keySet(keys []fileKey, allowHS bool) (*verify.Bundle, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	set := jwk.NewSet()
	for _, k := range keys {
		if err := set.AddKey(k.key); err != nil {
			return nil, fmt.Errorf("authn: trust: %w", err)
		}
	}
	b, err := verify.NewBundle(set, verify.AllowList(allowHS)...)
	if err != nil {
		return nil, fmt.Errorf("authn: trust: %w", err)
	}
	return b, nil
}
