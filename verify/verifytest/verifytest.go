package verifytest

import (
	"crypto/ed25519"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/keys"
	"github.com/fencegate/fencegate/verify"
)

// T0 is the default issue time of grants made by an Issuer:
// 2026-01-01T00:00:00Z.
var T0 = time.UnixMilli(1_767_225_600_000).UTC()

// Defaults of the grants made by Issuer.Grant.
const (
	DefaultIssuer   = "https://registry.fencegate.test"
	DefaultResource = "orders/acct-42"
	DefaultOwner    = "spiffe://fencegate.test/ns/default/sa/worker"
	DefaultFence    = 7
	DefaultTTL      = 30 * time.Second
	// DefaultProofTTL is the lifetime of proofs made by StatusFor.
	DefaultProofTTL = 5 * time.Second
)

// Issuer signs grants and status proofs with one freshly generated key.
type Issuer struct {
	t      testing.TB
	key    jwk.Key
	signer *keys.Signer
	// Now is the iat of grants made by Grant. It starts at T0.
	Now time.Time
	n   int
}

// NewIssuer returns an Issuer with a new random key for alg (EdDSA, ES256
// or HS256) made by keys.Generate.
func NewIssuer(t testing.TB, alg jwa.SignatureAlgorithm) *Issuer {
	t.Helper()
	key, err := keys.Generate(alg, nil)
	if err != nil {
		t.Fatalf("verifytest: generate %s key: %v", alg, err)
	}
	return NewIssuerFromKey(t, key)
}

// NewIssuerFromKey returns an Issuer signing with a given private key (with
// kid and alg), e.g. one built from a fixed seed for reproducible fuzzing.
func NewIssuerFromKey(t testing.TB, key jwk.Key) *Issuer {
	t.Helper()
	s, err := keys.NewSigner(key)
	if err != nil {
		t.Fatalf("verifytest: signer: %v", err)
	}
	return &Issuer{t: t, key: key, signer: s, Now: T0}
}

// NewEd25519IssuerFromSeed returns an EdDSA Issuer whose key is derived
// from a 32-byte seed and whose kid is kid, so tokens are reproducible.
func NewEd25519IssuerFromSeed(t testing.TB, seed [32]byte, kid string) *Issuer {
	t.Helper()
	key, err := jwk.FromRaw(ed25519.NewKeyFromSeed(seed[:]))
	if err != nil {
		t.Fatalf("verifytest: %v", err)
	}
	if err := key.Set(jwk.AlgorithmKey, jwa.EdDSA); err != nil {
		t.Fatalf("verifytest: %v", err)
	}
	if err := key.Set(jwk.KeyIDKey, kid); err != nil {
		t.Fatalf("verifytest: %v", err)
	}
	return NewIssuerFromKey(t, key)
}

// KeyID is the kid in the Issuer's token headers.
func (i *Issuer) KeyID() string { return i.signer.KeyID() }

// Alg is the Issuer's signing algorithm.
func (i *Issuer) Alg() jwa.SignatureAlgorithm { return i.signer.Alg() }

// Key is the Issuer's private signing key (the secret for HS256).
func (i *Issuer) Key() jwk.Key { return i.key }

// Signer is the Issuer's keys.Signer.
func (i *Issuer) Signer() *keys.Signer { return i.signer }

// Bundle returns a trust bundle holding this Issuer's key; see BundleOf.
func (i *Issuer) Bundle() *verify.Bundle {
	i.t.Helper()
	return BundleOf(i.t, i)
}

// BundleOf returns a trust bundle of the issuers' keys. Its allow-list is
// verify.DefaultAlgorithms(), plus HS256 when one of the issuers uses it.
func BundleOf(t testing.TB, issuers ...*Issuer) *verify.Bundle {
	t.Helper()
	ks := make([]jwk.Key, 0, len(issuers))
	allowed := verify.DefaultAlgorithms()
	for _, is := range issuers {
		ks = append(ks, is.key)
		if is.Alg() == jwa.HS256 && !containsAlg(allowed, jwa.HS256) {
			allowed = append(allowed, jwa.HS256)
		}
	}
	set, err := keys.Bundle(true, ks...)
	if err != nil {
		t.Fatalf("verifytest: bundle: %v", err)
	}
	b, err := verify.NewBundle(set, allowed...)
	if err != nil {
		t.Fatalf("verifytest: bundle: %v", err)
	}
	return b
}

// BundleFile writes the issuers' keys as a JWKS file in a new temporary
// directory (secrets included, for HS256 issuers), as a sidecar's
// trust.bundle reads it, and returns its path.
func BundleFile(t testing.TB, issuers ...*Issuer) string {
	t.Helper()
	ks := make([]jwk.Key, 0, len(issuers))
	for _, is := range issuers {
		ks = append(ks, is.key)
	}
	set, err := keys.Bundle(true, ks...)
	if err != nil {
		t.Fatalf("verifytest: bundle: %v", err)
	}
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := keys.Save(path, set); err != nil {
		t.Fatalf("verifytest: bundle file: %v", err)
	}
	return path
}

func containsAlg(list []jwa.SignatureAlgorithm, a jwa.SignatureAlgorithm) bool {
	for _, x := range list {
		if x == a {
			return true
		}
	}
	return false
}

// Grant returns a realistic valid lockGrant.v1 claim set (DefaultResource,
// DefaultOwner, fence DefaultFence, epoch 1, policy generation 1, iat Now),
// with a grantId and requestId unique to this Issuer, after applying the
// mutators in order.
func (i *Issuer) Grant(mutators ...func(*fencegate.Grant)) fencegate.Grant {
	i.n++
	g := fencegate.Grant{
		Schema:           fencegate.GrantSchema,
		Issuer:           DefaultIssuer,
		GrantID:          fmt.Sprintf("grant-%d", i.n),
		Resource:         DefaultResource,
		Owner:            DefaultOwner,
		RequestID:        fmt.Sprintf("req-%d", i.n),
		Lease:            fmt.Sprintf("lease-%d", i.n),
		OperationRoot:    fmt.Sprintf("op-%d", i.n),
		FenceToken:       DefaultFence,
		BackendRevision:  3,
		PolicyGeneration: 1,
		IssuerEpoch:      1,
		TTLMs:            uint64(DefaultTTL / time.Millisecond),
		OpClass:          "write",
		IssuedAt:         uint64(i.Now.UnixMilli()),
	}
	for _, m := range mutators {
		m(&g)
	}
	return g
}

// Sign signs g as a lockGrant.v1 token (typ "lockGrant.v1"). It signs what
// it is given: an invalid claim set gives a well-signed invalid token.
func (i *Issuer) Sign(g fencegate.Grant) []byte {
	i.t.Helper()
	tok, err := i.signer.Sign(fencegate.GrantSchema, g)
	if err != nil {
		i.t.Fatalf("verifytest: sign grant: %v", err)
	}
	return tok
}

// SignStatus signs st as a lockStatus.v1 proof (typ "lockStatus.v1").
func (i *Issuer) SignStatus(st fencegate.Status) []byte {
	i.t.Helper()
	tok, err := i.signer.Sign(fencegate.StatusSchema, st)
	if err != nil {
		i.t.Fatalf("verifytest: sign status: %v", err)
	}
	return tok
}

// SignRaw signs payload bytes as they are, with typ in the protected header.
func (i *Issuer) SignRaw(typ string, payload []byte) []byte {
	i.t.Helper()
	tok, err := i.signer.SignPayload(typ, payload)
	if err != nil {
		i.t.Fatalf("verifytest: sign payload: %v", err)
	}
	return tok
}

// StatusFor returns a HELD lockStatus.v1 claim set for the grant token and
// its claims g, issued at now and expiring DefaultProofTTL later, with the
// grant's epoch and policy generation as the current ones.
func (i *Issuer) StatusFor(token []byte, g fencegate.Grant, now time.Time) fencegate.Status {
	iat := uint64(now.UnixMilli())
	return fencegate.Status{
		Schema:           fencegate.StatusSchema,
		Issuer:           g.Issuer,
		GrantDigest:      fencegate.Digest(token),
		Resource:         g.Resource,
		Lease:            g.Lease,
		FenceToken:       g.FenceToken,
		State:            fencegate.StateHeld,
		BackendRevision:  g.BackendRevision,
		PolicyGeneration: g.PolicyGeneration,
		IssuerEpoch:      g.IssuerEpoch,
		IssuedAt:         iat,
		ExpiresAt:        iat + uint64(DefaultProofTTL/time.Millisecond),
	}
}
