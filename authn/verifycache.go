package authn

import (
	"crypto/sha256"
	"sync"
	"sync/atomic"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/verify"
)

// DefaultVerifyCacheEntries is the default bound of the verification cache
// (a grant entry holds its claims, digest and kid: a few hundred bytes).
const DefaultVerifyCacheEntries = 10000

// verifyCache memoizes successful token verifications: the signature
// check, the strict parse and the claim-shape checks of
// verify.ParseAndVerifyGrant and verify.ParseAndVerifyStatus.
//
// Why it is safe. Those two functions are pure: their answer depends only on
// the token's bytes, the trust bundle and the options (the size limit), and
// on nothing else: no clock, no request, no learned state. An entry is
// keyed by the SHA-256 of the exact token bytes and the kind of token, and
// records the generation of the trust bundle that verified it; a lookup
// under another generation misses, so a reload that drops a key makes the
// next request verify again (and fail, GRANT_INVALID). The options are
// fixed for the sidecar's life. So a hit returns exactly what verifying
// again would return, short of a SHA-256 collision.
//
// What it does not hold. Everything that depends on now (a proof's iat and
// exp against the route's maxAge and the clock skew), on the request (the
// route's resource and the caller's identity), or on learned state (the
// minimum issuer epoch, the highest epoch seen in proofs, grants the
// registry said have ended) is checked on every request after the lookup,
// by the same functions in the same order with the same codes, cached or
// not.
//
// Failures are not cached: a cache of rejections could be filled by anyone
// sending garbage, evicting the entries of real workers, and a rejection
// costs little (an unknown kid or a malformed token is refused before any
// signature work). Proofs read from the registry (registry status mode)
// are not cached either: each is fresh, so caching them would only evict
// the entries that are reused.
//
// The cache is bounded (CLOCK eviction: a hit sets an entry's reference
// bit, eviction passes over and clears set bits), so its memory is at most
// about limit times an entry's size. A nil *verifyCache is disabled: every
// call verifies.
type verifyCache struct {
	limit int

	mu    sync.RWMutex
	index map[cacheKey]int // slot of each key
	slots []cacheSlot
	hand  int

	hits, misses [kindCount]atomic.Uint64
}

type tokenKind uint8

const (
	kindGrant tokenKind = iota
	kindStatus
	kindCount
)

func (k tokenKind) String() string {
	if k == kindGrant {
		return "grant"
	}
	return "status"
}

type cacheKey struct {
	kind tokenKind
	sum  [sha256.Size]byte
}

type cacheSlot struct {
	key cacheKey
	val *verified
	ref atomic.Bool // set by a hit, cleared by the eviction hand
}

// verified is one successful verification. It is never changed once it is
// in the cache; lookups hand out copies of the claims.
type verified struct {
	gen    uint64 // generation of the trust bundle that verified it
	grant  fencegate.Grant
	digest string // the grant digest
	kid    string // the kid of the key that signed the grant
	status fencegate.Status
}

// newVerifyCache returns a cache of at most limit entries, or nil
// (disabled) when limit <= 0.
func newVerifyCache(limit int) *verifyCache {
	if limit <= 0 {
		return nil
	}
	return &verifyCache{limit: limit, index: make(map[cacheKey]int)}
}

// grant is verify.ParseAndVerifyGrant through the cache, with the bundle b
// of generation gen. It also returns the kid of the grant's signing key.
func (c *verifyCache) grant(token []byte, b *verify.Bundle, gen uint64, opts []verify.Option) (*fencegate.Grant, string, string, error) {
	if c == nil || len(token) > verify.TokenLimit(opts...) {
		g, digest, err := verify.ParseAndVerifyGrant(token, b, opts...)
		if err != nil {
			return nil, "", "", err
		}
		return g, digest, kidOf(token), nil
	}
	key := cacheKey{kind: kindGrant, sum: sha256.Sum256(token)}
	if v := c.lookup(key, gen); v != nil {
		g := v.grant
		return &g, v.digest, v.kid, nil
	}
	g, digest, err := verify.ParseAndVerifyGrant(token, b, opts...)
	if err != nil {
		return nil, "", "", err
	}
	kid := kidOf(token)
	c.add(key, &verified{gen: gen, grant: *g, digest: digest, kid: kid})
	return g, digest, kid, nil
}

// status is verify.ParseAndVerifyStatus through the cache, with the
// bundle b of generation gen.
func (c *verifyCache) status(token []byte, b *verify.Bundle, gen uint64, opts []verify.Option) (*fencegate.Status, error) {
	if c == nil || len(token) > verify.TokenLimit(opts...) {
		return verify.ParseAndVerifyStatus(token, b, opts...)
	}
	key := cacheKey{kind: kindStatus, sum: sha256.Sum256(token)}
	if v := c.lookup(key, gen); v != nil {
		st := v.status
		return &st, nil
	}
	st, err := verify.ParseAndVerifyStatus(token, b, opts...)
	if err != nil {
		return nil, err
	}
	c.add(key, &verified{gen: gen, status: *st})
	return st, nil
}

// lookup returns the entry of key verified under generation gen, or nil,
// and counts the hit or miss.
func (c *verifyCache) lookup(key cacheKey, gen uint64) *verified {
	c.mu.RLock()
	var v *verified
	if i, ok := c.index[key]; ok && c.slots[i].val.gen == gen {
		v = c.slots[i].val
		c.slots[i].ref.Store(true)
	}
	c.mu.RUnlock()
	if v == nil {
		c.misses[key.kind].Add(1)
	} else {
		c.hits[key.kind].Add(1)
	}
	return v
}

// add stores a successful verification, evicting one entry when full.
func (c *verifyCache) add(key cacheKey, v *verified) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i, ok := c.index[key]; ok {
		// Verified again (a concurrent miss, or a newer generation).
		c.slots[i].val = v
		return
	}
	if len(c.slots) < c.limit {
		c.index[key] = len(c.slots)
		c.slots = append(c.slots, cacheSlot{key: key, val: v})
		return
	}
	// CLOCK: pass over recently used entries (clearing their bit) and
	// evict the first one not used since the hand last passed. At most
	// one full turn: by then every bit is clear.
	for c.slots[c.hand].ref.Load() {
		c.slots[c.hand].ref.Store(false)
		c.hand = (c.hand + 1) % len(c.slots)
	}
	delete(c.index, c.slots[c.hand].key)
	c.slots[c.hand].key, c.slots[c.hand].val = key, v
	c.index[key] = c.hand
	c.hand = (c.hand + 1) % len(c.slots)
}

// reset drops every entry (a trust bundle reload: the generation check
// already makes old entries miss; this frees their memory).
func (c *verifyCache) reset() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.index)
	c.slots, c.hand = nil, 0
}

// VerifyCacheStats are the verification cache's counters by token kind.
type VerifyCacheStats struct {
	// Limit is the bound on entries; 0 means the cache is disabled.
	Limit   int
	Entries int
	// GrantHits, GrantMisses, StatusHits and StatusMisses count lookups
	// since start. A miss is followed by a full verification.
	GrantHits, GrantMisses   uint64
	StatusHits, StatusMisses uint64
}

func (c *verifyCache) stats() VerifyCacheStats {
	if c == nil {
		return VerifyCacheStats{}
	}
	c.mu.RLock()
	n := len(c.slots)
	c.mu.RUnlock()
	return VerifyCacheStats{
		Limit: c.limit, Entries: n,
		GrantHits: c.hits[kindGrant].Load(), GrantMisses: c.misses[kindGrant].Load(),
		StatusHits: c.hits[kindStatus].Load(), StatusMisses: c.misses[kindStatus].Load(),
	}
}
