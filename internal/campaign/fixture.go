package campaign

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/keys"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/verify"
)

// The registry and sidecar state every fixture is built around. The
// numbers leave room below and above: grants of epochs below MinEpoch are
// revoked, and policy generations other than Policy are stale.
const (
	issuer = "https://registry.fencegate.test"
	// Epoch is the registry's current issuer epoch; the sidecar has
	// learned it (SeenEpoch).
	Epoch = 5
	// MinEpoch is the sidecar's trust.minIssuerEpoch.
	MinEpoch = 3
	// Policy is the current policy generation of every resource.
	Policy = 4
	// MaxAge is the route's status.maxAge and MaxProofTTL the registry's
	// proofs.maxTTL (both their defaults).
	MaxAge      = 5 * time.Second
	MaxProofTTL = 5 * time.Second
	// Lineage is the registry's issuer lineage, carried by every
	// original grant (the registry always issues the claim).
	Lineage = "6c696e656167652d6f662d7468652d72"
	// ClockSkew is trust.clockSkew (its default).
	ClockSkew = time.Second
	// grantAge and proofAge: how long before the sidecar's now the
	// originals' grants and proofs were issued.
	grantAge = 2 * time.Second
	proofAge = 500 * time.Millisecond
	grantTTL = 30 * time.Second
)

// Now is the sidecar's fixed time: 2026-01-01T00:00:10Z.
var Now = time.UnixMilli(1_767_225_610_000).UTC()

// Fixture is the material of a campaign: the keys, the trust bundle, the
// sidecar and the original (accepted) tuples. It is built from a seed and
// is immutable afterwards, so workers share it.
type Fixture struct {
	signer  *keys.Signer // the registry's signing key, through its own code
	main    ed25519.PrivateKey
	mainKid string
	rot     ed25519.PrivateKey // a second trusted Ed25519 key (rotation)
	rotKid  string
	esPub   []byte // the trusted ES256 key's public point, uncompressed
	esKid   string
	hsKid   string             // the trusted HS256 secret's kid
	evil    ed25519.PrivateKey // a key no sidecar trusts
	evilKid string

	bundle    *verify.Bundle
	sidecar   *Sidecar
	originals []*original
}

// original is one accepted tuple with its claims and decoded segments.
type original struct {
	Tuple
	grant   fencegate.Grant
	proof   fencegate.Status
	digest  string
	gSeg    [3][]byte // decoded header, payload, signature of the grant
	pSeg    [3][]byte // ... of the proof
	version int       // index in Fixture.originals
}

// NewFixture builds the fixture of seed: keys derived from the seed (so
// tokens, and with them every count, are reproducible) and six originals
// made by the registry's code, each checked to be accepted by the Sidecar.
func NewFixture(seed uint64) (*Fixture, error) {
	rng := rand.New(rand.NewPCG(seed, 0x6b657973)) // "keys"
	f := new(Fixture)
	mainKey, err := edKey(rng)
	if err != nil {
		return nil, err
	}
	rotKey, err := edKey(rng)
	if err != nil {
		return nil, err
	}
	evilKey, err := edKey(rng)
	if err != nil {
		return nil, err
	}
	esKey, err := esKey(rng)
	if err != nil {
		return nil, err
	}
	hsKey, err := finishKey(randBytes(rng, 32), jwa.HS256)
	if err != nil {
		return nil, err
	}
	if f.signer, err = keys.NewSigner(mainKey); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFixture, err)
	}
	for _, k := range []struct {
		key  jwk.Key
		priv *ed25519.PrivateKey
		kid  *string
	}{{mainKey, &f.main, &f.mainKid}, {rotKey, &f.rot, &f.rotKid}, {evilKey, &f.evil, &f.evilKid}} {
		if err := k.key.Raw(k.priv); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrFixture, err)
		}
		*k.kid = k.key.KeyID()
	}
	f.esKid, f.hsKid = esKey.KeyID(), hsKey.KeyID()
	var ecPriv ecdsa.PrivateKey
	if err := esKey.Raw(&ecPriv); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFixture, err)
	}
	if f.esPub, err = ecPriv.PublicKey.Bytes(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFixture, err)
	}

	set, err := keys.Bundle(true, mainKey, rotKey, esKey, hsKey)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFixture, err)
	}
	if f.bundle, err = verify.NewBundle(set, verify.AllowList(true)...); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFixture, err)
	}
	f.sidecar = &Sidecar{
		Bundle: f.bundle, Options: []verify.Option{verify.WithMaxTokenBytes(verify.MaxTokenBytes)},
		MaxAge: MaxAge, ClockSkew: ClockSkew, MinIssuerEpoch: MinEpoch, SeenEpoch: Epoch, Now: Now,
	}

	const (
		resA   = "orders/acct-42"
		resB   = "orders/acct-43"
		resC   = "inventory/sku-9"
		owner1 = "spiffe://fencegate.test/ns/default/sa/worker"
		owner2 = "spiffe://fencegate.test/ns/billing/sa/reconciler"
	)
	specs := []struct {
		res, owner string
		fence      uint64
	}{
		{resA, owner1, 7},
		{resA, owner1, 8},
		{resA, owner1, 1<<53 + 1}, // above float64's exact range
		{resA, owner1, 1<<64 - 2}, // the last fence but one
		{resB, owner1, 3},
		{resC, owner2, 11},
	}
	for i, s := range specs {
		o, err := f.makeOriginal(i, s.res, s.owner, s.fence)
		if err != nil {
			return nil, err
		}
		f.originals = append(f.originals, o)
	}
	return f, nil
}

// makeOriginal issues a grant and a fresh HELD proof as the registry does.
func (f *Fixture) makeOriginal(i int, resource, owner string, fence uint64) (*original, error) {
	iat := Now.Add(-grantAge).UnixMilli()
	rec := registry.LeaseRecord{
		Lease: fmt.Sprintf("lease-%d", i+1), GrantID: fmt.Sprintf("grant-%d", i+1),
		Resource: resource, Owner: owner, RequestID: fmt.Sprintf("req-%d", i+1), OpClass: "write", Lineage: Lineage,
		Fence: fence, IssuerEpoch: Epoch, PolicyGeneration: Policy, Revision: uint64(100 + i),
		TTLMs: uint64(grantTTL / time.Millisecond), IssuedAt: iat, ExpiresAt: iat + grantTTL.Milliseconds(),
		State: fencegate.StateHeld,
	}
	g := registry.GrantClaims(rec, issuer)
	gtok, err := f.signer.Sign(fencegate.GrantSchema, &g)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFixture, err)
	}
	rec.Token, rec.Digest = string(gtok), fencegate.Digest(gtok)
	view := registry.LeaseView{Lease: rec, State: fencegate.StateHeld,
		Meta: registry.Meta{IssuerEpoch: Epoch, Revision: uint64(200 + i)}, PolicyGeneration: Policy}
	st := registry.ProofClaims(view, issuer, Now.Add(-proofAge), MaxProofTTL)
	ptok, err := f.signer.Sign(fencegate.StatusSchema, &st)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFixture, err)
	}
	o := &original{Tuple: Tuple{Grant: gtok, Proof: ptok, Resource: resource, Owner: owner},
		grant: g, proof: st, digest: rec.Digest, version: i}
	var ok1, ok2 bool
	o.gSeg, ok1 = lenientSegments(gtok)
	o.pSeg, ok2 = lenientSegments(ptok)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("%w: original %d is not a compact JWS", ErrFixture, i)
	}
	// The raw signer of the generators must make exactly the registry's
	// bytes, or re-signed mutations would differ in shape from real tokens.
	if again := compact(o.gSeg[0], o.gSeg[1], ed25519.Sign(f.main, signingInput(o.gSeg[0], o.gSeg[1]))); !bytes.Equal(again, gtok) {
		return nil, fmt.Errorf("%w: raw Ed25519 signing differs from keys.Signer", ErrFixture)
	}
	if !bytes.Equal(o.gSeg[0], f.header("EdDSA", f.mainKid, fencegate.GrantSchema)) {
		return nil, fmt.Errorf("%w: header %s differs from the generators' header", ErrFixture, o.gSeg[0])
	}
	if err := f.sidecar.Check(o.Tuple); err != nil {
		return nil, fmt.Errorf("%w: original %d is not accepted: %w", ErrFixture, i, err)
	}
	return o, nil
}

// Originals returns the accepted tuples mutations are derived from.
func (f *Fixture) Originals() []Tuple {
	out := make([]Tuple, len(f.originals))
	for i, o := range f.originals {
		out[i] = o.Tuple
	}
	return out
}

// Bundle is the sidecar's trust bundle.
func (f *Fixture) Bundle() *verify.Bundle { return f.bundle }

// Sidecar returns a copy of the sidecar the campaign checks by default.
func (f *Fixture) Sidecar() *Sidecar {
	s := *f.sidecar
	return &s
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func edKey(rng *rand.Rand) (jwk.Key, error) {
	return finishKey(ed25519.NewKeyFromSeed(randBytes(rng, ed25519.SeedSize)), jwa.EdDSA)
}

func esKey(rng *rand.Rand) (jwk.Key, error) {
	for {
		priv, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), randBytes(rng, 32))
		if err != nil {
			continue // a scalar of 0 or >= the order: draw again
		}
		return finishKey(priv, jwa.ES256)
	}
}

// finishKey makes a JWK as keys.Generate does: alg, RFC 7638 kid, use sig.
func finishKey(raw any, alg jwa.SignatureAlgorithm) (jwk.Key, error) {
	key, err := jwk.FromRaw(raw)
	if err == nil {
		err = key.Set(jwk.AlgorithmKey, alg)
	}
	if err == nil {
		err = jwk.AssignKeyID(key)
	}
	if err == nil && alg != jwa.HS256 {
		err = key.Set(jwk.KeyUsageKey, jwk.ForSignature)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s key: %w", ErrFixture, alg, err)
	}
	return key, nil
}
