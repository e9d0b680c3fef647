package sim

import (
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/registry"
)

// oracle is the ground truth a round checks the sidecars against. It is
// built from what the registry did (every grant it issued, every renewal,
// release, epoch bump and restore, at the virtual time it happened), never
// from what a sidecar said.
type oracle struct {
	grants map[string]*grantInfo // by operation root
	leases map[string]*leaseInfo // by lease ID
	epoch  uint64                // the registry's current issuer epoch
	// snap is the lease table at the registry's last snapshot.
	snap      map[string]leaseInfo
	snapEpoch uint64
	// latest is the newest grant issued on the main resource; issued
	// counts them.
	latest *grantInfo
	issued int
}

type grantInfo struct {
	token    string
	digest   string
	root     string
	fence    uint64
	resource string
	lease    string
	owner    string
	epoch    uint64
	revision uint64
	// issued is the grant's place in the order the registry issued the
	// main resource's grants (1, 2, ...).
	issued int
}

type leaseInfo struct {
	expiresAt int64 // ms: the lease is not held from this instant on
	// proofs are the HELD status proofs the registry signed for the lease
	// (iat, exp in ms): what a worker can show a proof-mode sidecar.
	proofs  []proofWindow
	ended   bool
	endedAt time.Duration
	cause   string // released, revoked, restored (forgotten by a restore)
	// restored: a registry restore rewrote the lease's history.
	restored bool
}

func newOracle() *oracle {
	return &oracle{grants: map[string]*grantInfo{}, leases: map[string]*leaseInfo{}, epoch: 1}
}

// granted records a lease the registry handed out (or handed out again,
// for a repeated request ID), and refreshes its expiry.
func (o *oracle) granted(res registry.Result) *grantInfo {
	l := res.View.Lease
	root := operationRoot(l.Resource, l.Fence, l.GrantID)
	if c, err := decodeClaims(l.Token); err == nil {
		root = c.OperationRoot // the grant's own claim is what the sidecar sees
	}
	g, ok := o.grants[root]
	if !ok {
		g = &grantInfo{token: l.Token, digest: l.Digest, root: root, fence: l.Fence, resource: l.Resource,
			lease: l.Lease, owner: l.Owner, epoch: l.IssuerEpoch, revision: l.Revision}
		o.grants[root] = g
		if l.Resource == mainResource {
			o.issued++
			g.issued = o.issued
			o.latest = g
		}
	}
	o.touch(res)
	return g
}

type proofWindow struct{ iat, exp int64 }

// touch records the expiry the registry now has for a lease (acquire,
// renew) and the status proof it signed with the answer.
func (o *oracle) touch(res registry.Result) {
	l := res.View.Lease
	li, ok := o.leases[l.Lease]
	if !ok {
		li = &leaseInfo{}
		o.leases[l.Lease] = li
	}
	li.expiresAt = l.ExpiresAt
	o.proved(res)
}

// proved records a status proof the registry signed (any answer about a
// lease carries one); only HELD proofs can make a write acceptable.
func (o *oracle) proved(res registry.Result) {
	st := res.StatusClaims
	li, ok := o.leases[st.Lease]
	if !ok || st.State != "HELD" {
		return
	}
	li.proofs = append(li.proofs, proofWindow{iat: int64(st.IssuedAt), exp: int64(st.ExpiresAt)})
}

// end records that a lease stopped being held at now (if it still was).
func (o *oracle) end(lease string, now time.Duration, cause string) {
	if li, ok := o.leases[lease]; ok && !li.ended {
		li.ended, li.endedAt, li.cause = true, now, cause
	}
}

// bump records an epoch bump: every lease of an older epoch is revoked.
func (o *oracle) bump(epoch uint64, now time.Duration) {
	o.epoch = epoch
	for _, g := range o.grants {
		if g.epoch < epoch {
			o.end(g.lease, now, "revoked")
		}
	}
}

func (o *oracle) snapshot() {
	o.snap = map[string]leaseInfo{}
	for id, li := range o.leases {
		o.snap[id] = *li
	}
	o.snapEpoch = o.epoch
}

// restore mirrors the registry's restore: a lease issued after the
// snapshot is forgotten (it ends now), a lease the snapshot knew is as it
// was then (a lease released since is held again, as the registry now
// says), and the epoch goes back.
func (o *oracle) restore(now time.Duration) bool {
	if o.snap == nil {
		return false
	}
	for id, li := range o.leases {
		if old, ok := o.snap[id]; ok {
			proofs := li.proofs // proofs signed before the restore stay signed
			*li = old
			li.proofs = proofs
		} else if !li.ended {
			li.ended, li.endedAt, li.cause = true, now, "restored"
		}
		li.restored = true
	}
	o.epoch = o.snapEpoch
	return true
}

// stale reports why a write under g accepted at now (nowMs on the
// registry's clock) is stale by the registry's truth, or "". off is the
// accepting sidecar's clock offset from the registry's, as far as the
// design tolerates it (never below -trust.clockSkew).
//
// Registry mode: the sidecar read the status at now, so the lease must be
// held at now: not ended, and now before its expiry. The sidecar's clock
// does not matter: the registry judged.
//
// Proof mode (docs/design.md 6.4, "the early-release window"): the
// sidecar accepts a HELD proof while now < exp and now - iat <= maxAge on
// its own clock, and exp never passes the lease's expiry at iat (3.3). So
// the write must be justified by a HELD proof the registry really signed
// for this lease with now+off < exp and now+off - iat <= maxAge; and,
// whatever proofs exist, a write more than maxAge after the lease was
// released, revoked or forgotten by a restore (on the sidecar's clock) is
// stale (a proof's iat is at most that instant).
func (o *oracle) stale(g *grantInfo, now time.Duration, nowMs int64, off time.Duration, proof bool, maxAge time.Duration) string {
	li, ok := o.leases[g.lease]
	if !ok {
		return "lease unknown to the registry"
	}
	if !proof {
		switch {
		case li.ended:
			return "lease " + li.cause
		case nowMs >= li.expiresAt:
			return "lease expired"
		}
		return ""
	}
	pnow, pnowMs := now+off, nowMs+off.Milliseconds()
	if li.ended && pnow-li.endedAt > maxAge {
		return "lease " + li.cause + " more than status.maxAge before"
	}
	maxAgeMs := maxAge.Milliseconds()
	for _, p := range li.proofs {
		if pnowMs < p.exp && pnowMs-p.iat <= maxAgeMs {
			return ""
		}
	}
	return "no HELD proof the registry signed covers this instant (expired or older than status.maxAge)"
}

// endOf is when the lease of g stopped being held, if it did by now and
// no restore rewrote its history.
func (o *oracle) endOf(g *grantInfo, nowMs int64, start int64) (time.Duration, bool) {
	li, ok := o.leases[g.lease]
	if !ok || li.restored {
		return 0, false
	}
	exp := time.Duration(li.expiresAt-start) * time.Millisecond
	switch {
	case li.ended && li.endedAt < exp:
		return li.endedAt, true
	case nowMs >= li.expiresAt:
		return exp, true
	}
	return 0, false
}

// later reports whether a was issued after b by the evidence the store
// compares (issuer epoch, then backend revision).
func later(a, b *grantInfo) bool {
	if a.epoch != b.epoch {
		return a.epoch > b.epoch
	}
	return a.revision > b.revision
}

// wire records what a registry answer on the HTTP API says (an SDK
// worker's acquire, lookup, renewal, status read or release), as granted,
// touch and proved do for the Go API's results: the grant (when the
// answer carries it: to its owner only), the lease's expiry, and a HELD
// proof. It returns the grant, if known.
func (o *oracle) wire(l *fencegate.Lease) *grantInfo {
	var g *grantInfo
	if l.Grant != "" {
		if c, err := decodeClaims(l.Grant); err == nil {
			if g = o.grants[c.OperationRoot]; g == nil {
				g = &grantInfo{token: l.Grant, digest: l.GrantDigest, root: c.OperationRoot, fence: c.FenceToken, resource: c.Resource,
					lease: c.Lease, owner: c.Owner, epoch: c.IssuerEpoch, revision: c.BackendRevision}
				o.grants[g.root] = g
				if g.resource == mainResource {
					o.issued++
					g.issued = o.issued
					o.latest = g
				}
			}
		}
	}
	if g == nil {
		for _, x := range o.grants {
			if x.lease == l.Lease {
				g = x
				break
			}
		}
	}
	li, ok := o.leases[l.Lease]
	if !ok {
		li = &leaseInfo{}
		o.leases[l.Lease] = li
	}
	li.expiresAt = l.ExpiresAt.UnixMilli()
	if st, err := decodeStatus(l.Status); err == nil && st.State == fencegate.StateHeld && st.Lease == l.Lease {
		li.proofs = append(li.proofs, proofWindow{iat: int64(st.IssuedAt), exp: int64(st.ExpiresAt)})
	}
	return g
}
