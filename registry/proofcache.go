package registry

import (
	"sync"
	"time"

	"github.com/fencegate/fencegate"
)

// proofCache lets the registry answer a status read with a proof it signed
// a moment ago instead of signing a new one, when that proof states exactly
// what the read just found.
//
// Why this keeps a status read linearizable: every read still goes to the
// backend (Registry.GrantStatus reads the lease in one linearizable step,
// as Status does); only the signature is reused. A cached proof is returned only
// when every claim a sidecar decides on (grant digest, resource, lease,
// fence, state, policy generation, issuer epoch) equals the claims of the
// state read now. What differs is when the proof was made: its iat (at most
// reuse old), its exp (never later than the lease's expiry at the time, and
// a lease's expiry only grows while its state stays the same) and its
// backend revision (the global revision of an earlier read, at which the
// lease was in the same state). The proof is therefore a true statement
// about the present that a sidecar checks like any other: signature, the
// binding to its grant, freshness (now - iat <= its route's maxAge, which
// must exceed reuse; the sidecar's default 5 s does) and exp.
//
// A state change of any of those claims (a release, an expiry, a revoke by
// epoch or policy) makes the next read sign a new proof, since its claims
// differ. The cache is memory only; a restarted registry starts empty.
type proofCache struct {
	reuse time.Duration
	max   int
	mu    sync.Mutex
	m     map[string]cachedProof
}

type cachedProof struct {
	claims fencegate.Status
	token  []byte
}

// defaultProofCacheEntries bounds the cache: one entry per grant digest.
const defaultProofCacheEntries = 65536

func newProofCache(reuse time.Duration, max int) *proofCache {
	if reuse <= 0 {
		return nil
	}
	return &proofCache{reuse: reuse, max: max, m: make(map[string]cachedProof)}
}

// sameStatement reports whether a and b state the same about a grant:
// every claim but iat, exp and the backend revision.
func sameStatement(a, b fencegate.Status) bool {
	a.IssuedAt, a.ExpiresAt, a.BackendRevision = 0, 0, 0
	b.IssuedAt, b.ExpiresAt, b.BackendRevision = 0, 0, 0
	return a == b
}

// get returns a cached proof making the statement of want, signed at most
// reuse before now and valid for at least another reuse, if there is one.
func (c *proofCache) get(want fencegate.Status, now time.Time) (cachedProof, bool) {
	if c == nil || want.GrantDigest == "" {
		return cachedProof{}, false
	}
	c.mu.Lock()
	p, ok := c.m[want.GrantDigest]
	c.mu.Unlock()
	if !ok || !sameStatement(p.claims, want) {
		return cachedProof{}, false
	}
	nowMs := uint64(ms(now))
	reuseMs := uint64(c.reuse.Milliseconds())
	if p.claims.IssuedAt > nowMs || nowMs-p.claims.IssuedAt > reuseMs || p.claims.ExpiresAt < nowMs+reuseMs {
		return cachedProof{}, false
	}
	return p, true
}

// put remembers a proof just signed. A full cache is emptied first: it only
// saves signatures, so losing it costs one signature per grant.
func (c *proofCache) put(claims fencegate.Status, token []byte) {
	if c == nil || claims.GrantDigest == "" {
		return
	}
	c.mu.Lock()
	if len(c.m) >= c.max {
		clear(c.m)
	}
	c.m[claims.GrantDigest] = cachedProof{claims: claims, token: token}
	c.mu.Unlock()
}
