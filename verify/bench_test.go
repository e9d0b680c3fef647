package verify_test

import (
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"

	"github.com/fencegate/fencegate/verify"
	"github.com/fencegate/fencegate/verify/verifytest"
)

func BenchmarkParseAndVerifyGrant(b *testing.B) {
	for _, alg := range []jwa.SignatureAlgorithm{jwa.EdDSA, jwa.ES256, jwa.HS256} {
		b.Run(alg.String(), func(b *testing.B) {
			is := verifytest.NewIssuer(b, alg)
			bundle := is.Bundle()
			tok := is.Sign(is.Grant())
			b.SetBytes(int64(len(tok)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := verify.ParseAndVerifyGrant(tok, bundle); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkParseAndVerifyStatus is a proof's full verification per
// algorithm (what the sidecar does on a verification cache miss; the
// cached path is proxy's BenchmarkVerifyToken).
func BenchmarkParseAndVerifyStatus(b *testing.B) {
	for _, alg := range []jwa.SignatureAlgorithm{jwa.EdDSA, jwa.ES256, jwa.HS256} {
		b.Run(alg.String(), func(b *testing.B) {
			is := verifytest.NewIssuer(b, alg)
			bundle := is.Bundle()
			g := is.Grant()
			tok := is.SignStatus(is.StatusFor(is.Sign(g), g, verifytest.T0))
			b.SetBytes(int64(len(tok)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := verify.ParseAndVerifyStatus(tok, bundle); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGrantAndStatus is the whole of applyFencedMutation steps 2-3 for
// one request: grant, binding, proof and status check.
func BenchmarkGrantAndStatus(b *testing.B) {
	is := verifytest.NewIssuer(b, jwa.EdDSA)
	bundle := is.Bundle()
	g := is.Grant()
	tok := is.Sign(g)
	now := verifytest.T0.Add(time.Hour)
	proof := is.SignStatus(is.StatusFor(tok, g, now))
	pol := verify.StatusPolicy{MaxAge: 2 * time.Second}
	b.ReportAllocs()
	for b.Loop() {
		grant, digest, err := verify.ParseAndVerifyGrant(tok, bundle)
		if err != nil {
			b.Fatal(err)
		}
		if err := verify.CheckBinding(grant, verifytest.DefaultResource, verifytest.DefaultOwner); err != nil {
			b.Fatal(err)
		}
		st, err := verify.ParseAndVerifyStatus(proof, bundle)
		if err != nil {
			b.Fatal(err)
		}
		if err := verify.CheckStatus(st, grant, digest, now, pol); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRejectUnknownKid measures how cheaply a forged token with an
// unknown kid is refused (no signature work).
func BenchmarkRejectUnknownKid(b *testing.B) {
	is := verifytest.NewIssuer(b, jwa.EdDSA)
	bundle := verifytest.NewIssuer(b, jwa.EdDSA).Bundle()
	tok := is.Sign(is.Grant())
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := verify.ParseAndVerifyGrant(tok, bundle); err == nil {
			b.Fatal("accepted")
		}
	}
}
