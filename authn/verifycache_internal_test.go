package authn

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/verify"
	"github.com/fencegate/fencegate/verify/verifytest"
)

// cacheTokens returns n distinct real grants and the bundle that trusts them.
func cacheTokens(t *testing.T, n int) ([][]byte, *verify.Bundle) {
	t.Helper()
	is := verifytest.NewIssuer(t, jwa.EdDSA)
	toks := make([][]byte, n)
	for i := range toks {
		toks[i] = is.Sign(is.Grant(func(g *fencegate.Grant) { g.FenceToken = uint64(i + 1) }))
	}
	return toks, is.Bundle()
}

func TestVerifyCacheBoundedClock(t *testing.T) {
	toks, b := cacheTokens(t, 8)
	c := newVerifyCache(3)
	for _, tok := range toks[:3] {
		if _, _, _, err := c.grant(tok, b, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	// toks[0] is used again: CLOCK keeps it and evicts toks[1], the first
	// entry not used since it was added.
	c.grant(toks[0], b, 1, nil)
	c.grant(toks[3], b, 1, nil)
	s := c.stats()
	if s.Entries != 3 || s.GrantHits != 1 || s.GrantMisses != 4 {
		t.Fatalf("stats %+v, want 3 entries, 1 hit, 4 misses", s)
	}
	c.grant(toks[0], b, 1, nil)
	c.grant(toks[1], b, 1, nil)
	if s := c.stats(); s.GrantHits != 2 || s.GrantMisses != 5 {
		t.Fatalf("toks[0] must still be cached and toks[1] evicted: %+v", s)
	}
	for _, tok := range toks {
		c.grant(tok, b, 1, nil)
	}
	if s := c.stats(); s.Entries != 3 || len(c.index) != 3 {
		t.Fatalf("the cache holds %d entries (index %d), bound 3", s.Entries, len(c.index))
	}
}

// TestVerifyCacheGeneration: an entry verified under one bundle generation
// never answers for another, even when it is added after a reset (a
// request that verified with the old bundle while a reload happened).
func TestVerifyCacheGeneration(t *testing.T) {
	toks, b := cacheTokens(t, 1)
	c := newVerifyCache(10)
	c.grant(toks[0], b, 1, nil)
	c.grant(toks[0], b, 1, nil)
	if s := c.stats(); s.GrantHits != 1 {
		t.Fatalf("same generation: %+v", s)
	}
	c.reset()
	c.grant(toks[0], b, 1, nil) // late: verified with generation 1 after the reset
	if s := c.stats(); s.GrantHits != 1 || s.GrantMisses != 2 {
		t.Fatalf("after reset: %+v", s)
	}
	// Under generation 2 (a bundle without the key) it must verify again.
	other := verifytest.NewIssuer(t, jwa.EdDSA).Bundle()
	if _, _, _, err := c.grant(toks[0], other, 2, nil); verify.CodeOf(err) == "" {
		t.Fatalf("a grant cached under generation 1 passes under generation 2: %v", err)
	}
	if s := c.stats(); s.GrantHits != 1 {
		t.Fatalf("a hit across generations: %+v", s)
	}
}

// TestVerifyCacheNoNegatives: failures are not cached, and the size limit
// is checked before a token is hashed or looked up.
func TestVerifyCacheNoNegatives(t *testing.T) {
	toks, b := cacheTokens(t, 1)
	c := newVerifyCache(10)
	// One signature character changed, always to another one (replacing
	// the last two with "AA" left a token ending in "AA" valid, 1 run in
	// about 256).
	bad := bytes.Clone(toks[0])
	i := len(bad) - 10
	bad[i] = map[bool]byte{true: 'B', false: 'A'}[bad[i] == 'A']
	for range 3 {
		_, _, _, err := c.grant(bad, b, 1, nil)
		if !strings.Contains(fmt.Sprint(err), "GRANT_INVALID") {
			t.Fatalf("tampered grant: %v", err)
		}
	}
	if s := c.stats(); s.Entries != 0 || s.GrantMisses != 3 {
		t.Fatalf("a failure was cached: %+v", s)
	}
	c.grant(toks[0], b, 1, nil)
	_, _, _, err := c.grant(toks[0], b, 1, []verify.Option{verify.WithMaxTokenBytes(len(toks[0]) - 1)})
	if verify.CodeOf(err) == "" {
		t.Fatal("a cached grant over the size limit was accepted")
	}
	if s := c.stats(); s.GrantHits != 0 {
		t.Fatalf("an oversized token was looked up: %+v", s)
	}
}

// TestVerifyCacheCopies: callers get their own copy of the claims.
func TestVerifyCacheCopies(t *testing.T) {
	toks, b := cacheTokens(t, 1)
	c := newVerifyCache(10)
	g1, _, _, _ := c.grant(toks[0], b, 1, nil)
	g1.Owner = "someone-else"
	g2, digest, kid, err := c.grant(toks[0], b, 1, nil)
	if err != nil || g2.Owner != verifytest.DefaultOwner || digest != fencegate.Digest(toks[0]) || kid == "" {
		t.Fatalf("cached grant %+v %s %q %v", g2, digest, kid, err)
	}
}

func TestVerifyCacheConcurrent(t *testing.T) {
	toks, b := cacheTokens(t, 16)
	c := newVerifyCache(5)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				tok := toks[(i*7+w)%len(toks)]
				g, _, _, err := c.grant(tok, b, uint64(1+i%2), nil)
				if err != nil || g.FenceToken == 0 {
					t.Errorf("grant: %v", err)
					return
				}
				if i%50 == 0 {
					c.reset()
				}
			}
		})
	}
	wg.Wait()
	if s := c.stats(); s.Entries > 5 || s.GrantHits+s.GrantMisses != 800 {
		t.Fatalf("stats %+v", s)
	}
}

func TestVerifyCacheDisabled(t *testing.T) {
	toks, b := cacheTokens(t, 1)
	var c *verifyCache = newVerifyCache(0)
	if c != nil {
		t.Fatal("a cache of 0 entries is not disabled")
	}
	for range 2 {
		if _, _, kid, err := c.grant(toks[0], b, 1, nil); err != nil || kid == "" {
			t.Fatalf("disabled cache: %q %v", kid, err)
		}
	}
	if s := c.stats(); s != (VerifyCacheStats{}) {
		t.Fatalf("stats %+v", s)
	}
}

func TestVerifyCacheMetrics(t *testing.T) {
	toks, b := cacheTokens(t, 1)
	tr := &trust{cache: newVerifyCache(10)}
	reg := prometheus.NewRegistry()
	reg.MustRegister(tr.collector())
	v := trustView{bundle: b, gen: 1, cache: tr.cache}
	v.grant(toks[0], nil)
	v.grant(toks[0], nil)
	v.grant(toks[0], nil)
	want := `
# HELP fencegate_proxy_verify_cache_entries Verified tokens held by the verification cache.
# TYPE fencegate_proxy_verify_cache_entries gauge
fencegate_proxy_verify_cache_entries 1
# HELP fencegate_proxy_verify_cache_lookups_total Verification cache lookups by token kind (grant, status) and result (hit, miss). A miss verifies the token in full; failures are never cached.
# TYPE fencegate_proxy_verify_cache_lookups_total counter
fencegate_proxy_verify_cache_lookups_total{kind="grant",result="hit"} 2
fencegate_proxy_verify_cache_lookups_total{kind="grant",result="miss"} 1
fencegate_proxy_verify_cache_lookups_total{kind="status",result="hit"} 0
fencegate_proxy_verify_cache_lookups_total{kind="status",result="miss"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "fencegate_proxy_verify_cache_entries", "fencegate_proxy_verify_cache_lookups_total"); err != nil {
		t.Fatal(err)
	}
}
