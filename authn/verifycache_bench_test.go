package authn

import (
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/verify/verifytest"
)

// BenchmarkVerifyToken is the sidecar's token verification, grant and
// proof, per algorithm: cold (every call verifies in full, as with the
// cache disabled or on a miss) and cached (the same bytes again: a lookup
// and a copy of the claims).
//
//	go test ./proxy -run '^$' -bench VerifyToken -benchmem
func BenchmarkVerifyToken(b *testing.B) {
	for _, alg := range []jwa.SignatureAlgorithm{jwa.EdDSA, jwa.ES256} {
		is := verifytest.NewIssuer(b, alg)
		bundle := is.Bundle()
		g := is.Grant()
		grant := is.Sign(g)
		proof := is.SignStatus(is.StatusFor(grant, g, verifytest.T0.Add(time.Second)))
		for _, path := range []string{"cold", "cached"} {
			cache := newVerifyCache(DefaultVerifyCacheEntries)
			if path == "cold" {
				cache = nil
			}
			b.Run("kind=grant/alg="+alg.String()+"/path="+path, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, _, _, err := cache.grant(grant, bundle, 1, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("kind=status/alg="+alg.String()+"/path="+path, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := cache.status(proof, bundle, 1, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkVerifyCacheParallel is cached grant lookups from every core,
// over a working set of 1,000 grants.
func BenchmarkVerifyCacheParallel(b *testing.B) {
	is := verifytest.NewIssuer(b, jwa.EdDSA)
	bundle := is.Bundle()
	toks := make([][]byte, 1000)
	cache := newVerifyCache(DefaultVerifyCacheEntries)
	for i := range toks {
		toks[i] = is.Sign(is.Grant(func(g *fencegate.Grant) { g.FenceToken = uint64(i + 1) }))
		cache.grant(toks[i], bundle, 1, nil)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			if _, _, _, err := cache.grant(toks[i%len(toks)], bundle, 1, nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
