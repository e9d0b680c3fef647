package verify_test

import (
	"errors"
	"fmt"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/keys"
	"github.com/fencegate/fencegate/verify"
)

// Example authenticates a lockGrant.v1 against a trust bundle, then binds
// it to the route's resource and the caller's identity. Verification does
// no I/O: the bundle is the only source of keys.
func Example() {
	// The registry's side: a signing key and a signed grant.
	key, _ := keys.Generate(jwa.EdDSA, nil)
	signer, _ := keys.NewSigner(key)
	token, _ := signer.Sign(fencegate.GrantSchema, fencegate.Grant{
		Schema: fencegate.GrantSchema, Issuer: "registry", GrantID: "g-1",
		Resource: "invoice-batch/7", Owner: "spiffe://example.org/worker",
		RequestID: "req-1", Lease: "lease-1", OperationRoot: "sha256:" + fmt.Sprintf("%064x", 1),
		FenceToken: 42, BackendRevision: 9, PolicyGeneration: 0, IssuerEpoch: 1,
		TTLMs: 10000, OpClass: "write", IssuedAt: 1767225600000,
	})

	// The sidecar's side: the public trust bundle, EdDSA allowed.
	pub, _ := key.PublicKey()
	set := jwk.NewSet()
	_ = set.AddKey(pub)
	bundle, err := verify.NewBundle(set, verify.AllowList(false)...)
	if err != nil {
		fmt.Println(err)
		return
	}
	g, digest, err := verify.ParseAndVerifyGrant(token, bundle)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("fence", g.FenceToken, "digest", digest[:7])
	fmt.Println("bound:", verify.CheckBinding(g, "invoice-batch/7", "spiffe://example.org/worker") == nil)

	// Another caller presenting the same grant is refused.
	err = verify.CheckBinding(g, "invoice-batch/7", "spiffe://example.org/attacker")
	var ve *verify.Error
	fmt.Println(errors.As(err, &ve), ve.Code)

	// A flipped byte in the signature is refused before any claim is read.
	token[len(token)-3] ^= 1
	_, _, err = verify.ParseAndVerifyGrant(token, bundle)
	fmt.Println(errors.As(err, &ve), ve.Code)
	// Output:
	// fence 42 digest sha256:
	// bound: true
	// true OWNER_MISMATCH
	// true GRANT_INVALID
}
