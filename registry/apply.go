package registry

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/verify"
)

// errRollback ends an Update that decided to write nothing.
var errRollback = errors.New("registry: rollback")

// OperationRoot is the grant's operation root: a digest binding the
// resource, the fence and the grant ID. Every segment of the grant's
// long task shares it.
func OperationRoot(resource string, fence uint64, grantID string) string {
	return fencegate.Digest([]byte(resource + "\n" + strconv.FormatUint(fence, 10) + "\n" + grantID))
}

// LeaseState is the effective state of a lease at now: the stored state
// unless that is HELD, then REVOKED when its issuer epoch is older than the
// current one or its policy generation is not the resource's current one,
// EXPIRED once now reaches its expiry, else HELD.
func LeaseState(l LeaseRecord, m Meta, policyGen uint64, now time.Time) string {
	switch {
	case l.State != verify.StateHeld:
		return l.State
	case l.IssuerEpoch < m.IssuerEpoch, l.PolicyGeneration != policyGen:
		return verify.StateRevoked
	case ms(now) >= l.ExpiresAt:
		return verify.StateExpired
	default:
		return verify.StateHeld
	}
}

func loadMeta(tx Tx) (Meta, error) {
	m, err := tx.Meta()
	if err != nil {
		return m, err
	}
	if m.IssuerEpoch == 0 {
		m.IssuerEpoch = 1
	}
	return m, nil
}

// ApplyAcquire is the acquire decision inside one transaction.
func ApplyAcquire(tx Tx, in AcquireInput, seal SealFunc) (AcquireResult, error) {
	m, err := loadMeta(tx)
	if err != nil {
		return AcquireResult{}, err
	}
	policies, err := tx.Policies()
	if err != nil {
		return AcquireResult{}, err
	}
	pol := MatchPolicy(policies, in.Resource)

	// Idempotency first: the same (owner, requestId) gets the same grant.
	if id, ok, err := tx.LeaseByRequest(in.Owner, in.RequestID); err != nil {
		return AcquireResult{}, err
	} else if ok {
		l, found, err := tx.Lease(id)
		if err != nil {
			return AcquireResult{}, err
		}
		if !found {
			return AcquireResult{}, fmt.Errorf("%w: request index points to missing lease %s", ErrBackend, id)
		}
		if l.Resource != in.Resource || l.OpClass != in.OpClass {
			return AcquireResult{}, fmt.Errorf("%w: request %q was for %s", ErrRequestConflict, in.RequestID, l.Resource)
		}
		return AcquireResult{Existing: true, View: view(l, m, pol.Generation, in.Now)}, nil
	}
	if err := pol.Check(in.Owner, in.OpClass, in.TTL); err != nil {
		return AcquireResult{}, err
	}

	rec, _, err := tx.Resource(in.Resource)
	if err != nil {
		return AcquireResult{}, err
	}
	rec.Resource = in.Resource
	res := AcquireResult{FreedAt: rec.FreedAt}
	if rec.Holder != "" {
		h, found, err := tx.Lease(rec.Holder)
		if err != nil {
			return AcquireResult{}, err
		}
		if found {
			st := LeaseState(h, m, pol.Generation, in.Now)
			if st == verify.StateHeld {
				h.Token, h.Digest = "", ""
				return AcquireResult{Busy: true, Holder: h}, nil
			}
			if h.State == verify.StateHeld { // close it: observed expiry or revocation
				h.State = st
				h.EndedAt = ms(in.Now)
				if st == verify.StateExpired {
					h.EndedAt = h.ExpiresAt
				}
				if err := tx.PutLease(h); err != nil {
					return AcquireResult{}, err
				}
				ended := h
				res.Ended = &ended
				res.FreedAt = h.EndedAt
			}
		}
	}

	base := max(rec.LastFence, rec.FenceFloor, m.FenceFloor)
	if base == math.MaxUint64 {
		return AcquireResult{}, ErrFenceExhausted
	}
	fence := base + 1
	m.Revision++
	now := ms(in.Now)
	l := LeaseRecord{
		Lease:            in.LeaseID,
		GrantID:          in.GrantID,
		Resource:         in.Resource,
		Owner:            in.Owner,
		RequestID:        in.RequestID,
		OpClass:          in.OpClass,
		Fence:            fence,
		IssuerEpoch:      m.IssuerEpoch,
		PolicyGeneration: pol.Generation,
		Revision:         m.Revision,
		TTLMs:            uint64(in.TTL.Milliseconds()),
		IssuedAt:         now,
		ExpiresAt:        now + in.TTL.Milliseconds(),
		State:            verify.StateHeld,
	}
	claims := GrantClaims(l, in.Issuer)
	tok, err := seal(&claims)
	if err != nil {
		return AcquireResult{}, fmt.Errorf("registry: seal grant: %w", err)
	}
	l.Token = string(tok)
	l.Digest = verify.Digest(tok)

	rec.LastFence = fence
	rec.Holder = l.Lease
	rec.FreedAt = 0
	for _, err := range []error{
		tx.PutMeta(m),
		tx.PutResource(rec),
		tx.PutLease(l),
		tx.PutRequest(in.Owner, in.RequestID, l.Lease),
		tx.PutDigest(l.Digest, l.Lease),
	} {
		if err != nil {
			return AcquireResult{}, err
		}
	}
	res.Granted = true
	res.View = view(l, m, pol.Generation, in.Now)
	return res, nil
}

// GrantClaims is the lockGrant.v1 claim set of a lease record.
func GrantClaims(l LeaseRecord, issuer string) verify.Grant {
	return verify.Grant{
		Schema:           verify.GrantSchema,
		Issuer:           issuer,
		GrantID:          l.GrantID,
		Resource:         l.Resource,
		Owner:            l.Owner,
		RequestID:        l.RequestID,
		Lease:            l.Lease,
		OperationRoot:    OperationRoot(l.Resource, l.Fence, l.GrantID),
		FenceToken:       l.Fence,
		BackendRevision:  l.Revision,
		PolicyGeneration: l.PolicyGeneration,
		IssuerEpoch:      l.IssuerEpoch,
		TTLMs:            l.TTLMs,
		OpClass:          l.OpClass,
		IssuedAt:         uint64(l.IssuedAt),
	}
}

func view(l LeaseRecord, m Meta, policyGen uint64, now time.Time) LeaseView {
	return LeaseView{Lease: l, State: LeaseState(l, m, policyGen, now), Meta: m, PolicyGeneration: policyGen}
}

func policyOf(tx Tx, resource string) (Policy, error) {
	ps, err := tx.Policies()
	if err != nil {
		return Policy{}, err
	}
	return MatchPolicy(ps, resource), nil
}

func policyGen(tx Tx, resource string) (uint64, error) {
	p, err := policyOf(tx, resource)
	return p.Generation, err
}

// ownedLease loads a lease for renew or release and checks its owner.
func ownedLease(tx Tx, id, owner string) (LeaseRecord, Meta, Policy, error) {
	m, err := loadMeta(tx)
	if err != nil {
		return LeaseRecord{}, m, Policy{}, err
	}
	l, found, err := tx.Lease(id)
	if err != nil {
		return l, m, Policy{}, err
	}
	if !found {
		return l, m, Policy{}, fmt.Errorf("%w: lease %q", ErrNotFound, id)
	}
	if l.Owner != owner {
		return LeaseRecord{}, m, Policy{}, fmt.Errorf("%w: lease %q", ErrNotOwner, id)
	}
	pol, err := policyOf(tx, l.Resource)
	return l, m, pol, err
}

// closeLease writes the end of a lease that is no longer HELD and frees its
// resource, when that is not written yet.
func closeLease(tx Tx, l *LeaseRecord, st string, endedAt int64) error {
	if l.State != verify.StateHeld {
		return nil
	}
	l.State, l.EndedAt = st, endedAt
	if err := tx.PutLease(*l); err != nil {
		return err
	}
	rec, found, err := tx.Resource(l.Resource)
	if err != nil || !found || rec.Holder != l.Lease {
		return err
	}
	rec.FreedAt = endedAt
	return tx.PutResource(rec)
}

// ApplyRenew extends a held lease by in.TTL from in.Now, or by the lease's
// own TTL (the ttlMs of its grant) when in.TTL is zero; the policy's TTL
// bounds apply either way. The returned decision error is ErrNotHeld when
// the lease is no longer held; the transaction still commits, recording an
// observed expiry.
func ApplyRenew(tx Tx, in RenewInput) (LeaseView, error, error) {
	if in.TTL < 0 || (in.TTL > 0 && in.TTL < time.Millisecond) {
		return LeaseView{}, nil, fmt.Errorf("%w: renew ttl %s: want 0 (the lease's own) or at least 1ms", ErrInvalidInput, in.TTL)
	}
	l, m, pol, err := ownedLease(tx, in.Lease, in.Owner)
	if err != nil {
		return LeaseView{}, nil, err
	}
	gen := pol.Generation
	st := LeaseState(l, m, gen, in.Now)
	if st != verify.StateHeld {
		end := ms(in.Now)
		if st == verify.StateExpired {
			end = l.ExpiresAt
		}
		if err := closeLease(tx, &l, st, end); err != nil {
			return LeaseView{}, nil, err
		}
		return view(l, m, gen, in.Now), fmt.Errorf("%w: lease %s is %s", ErrNotHeld, l.Lease, st), nil
	}
	ttl := in.TTL
	if ttl == 0 {
		if l.TTLMs == 0 || l.TTLMs > math.MaxInt64/uint64(time.Millisecond) {
			return LeaseView{}, nil, fmt.Errorf("%w: lease %s has no usable TTL (%dms) to renew by", ErrBackend, l.Lease, l.TTLMs)
		}
		ttl = time.Duration(l.TTLMs) * time.Millisecond
	}
	if err := pol.Check(l.Owner, l.OpClass, ttl); err != nil {
		return LeaseView{}, nil, err
	}
	m.Revision++
	l.ExpiresAt = ms(in.Now) + ttl.Milliseconds()
	if err := tx.PutLease(l); err != nil {
		return LeaseView{}, nil, err
	}
	if err := tx.PutMeta(m); err != nil {
		return LeaseView{}, nil, err
	}
	return view(l, m, gen, in.Now), nil, nil
}

// ApplyRelease releases a held lease. Releasing a lease that is no longer
// held changes nothing and reports its state.
func ApplyRelease(tx Tx, in ReleaseInput) (LeaseView, error) {
	l, m, pol, err := ownedLease(tx, in.Lease, in.Owner)
	if err != nil {
		return LeaseView{}, err
	}
	gen := pol.Generation
	st := LeaseState(l, m, gen, in.Now)
	switch st {
	case verify.StateHeld:
		st = verify.StateReleased
		m.Revision++
		if err := tx.PutMeta(m); err != nil {
			return LeaseView{}, err
		}
		fallthrough
	case verify.StateExpired, verify.StateRevoked:
		end := ms(in.Now)
		if st == verify.StateExpired {
			end = l.ExpiresAt
		}
		if err := closeLease(tx, &l, st, end); err != nil {
			return LeaseView{}, err
		}
	}
	return view(l, m, gen, in.Now), nil
}

// ReadLease reads one lease with the registry's current values.
func ReadLease(tx Tx, q LeaseQuery) (LeaseView, error) {
	m, err := loadMeta(tx)
	if err != nil {
		return LeaseView{}, err
	}
	id := q.Lease
	var found bool
	switch {
	case q.Lease != "":
		found = true
	case q.Digest != "":
		id, found, err = tx.LeaseByDigest(q.Digest)
	case q.Owner != "" && q.RequestID != "":
		id, found, err = tx.LeaseByRequest(q.Owner, q.RequestID)
	default:
		return LeaseView{}, fmt.Errorf("%w: empty lease query", ErrInvalidInput)
	}
	if err != nil {
		return LeaseView{}, err
	}
	var l LeaseRecord
	if found {
		l, found, err = tx.Lease(id)
		if err != nil {
			return LeaseView{}, err
		}
	}
	if !found {
		return LeaseView{}, fmt.Errorf("%w: lease", ErrNotFound)
	}
	gen, err := policyGen(tx, l.Resource)
	if err != nil {
		return LeaseView{}, err
	}
	return view(l, m, gen, q.Now), nil
}

// ReadResource reads a resource's record and its holder.
func ReadResource(tx Tx, resource string, now time.Time) (ResourceView, error) {
	m, err := loadMeta(tx)
	if err != nil {
		return ResourceView{}, err
	}
	rec, found, err := tx.Resource(resource)
	if err != nil {
		return ResourceView{}, err
	}
	gen, err := policyGen(tx, resource)
	if err != nil {
		return ResourceView{}, err
	}
	if !found {
		rec.Resource = resource
	}
	v := ResourceView{Record: rec, PolicyGeneration: gen, Meta: m}
	if rec.Holder != "" {
		l, ok, err := tx.Lease(rec.Holder)
		if err != nil {
			return ResourceView{}, err
		}
		if ok {
			hv := view(l, m, gen, now)
			v.Holder = &hv
		}
	}
	return v, nil
}

// ApplyBumpEpoch increments the issuer epoch.
func ApplyBumpEpoch(tx Tx) (Meta, error) {
	m, err := loadMeta(tx)
	if err != nil {
		return m, err
	}
	if m.IssuerEpoch == math.MaxUint64 {
		return m, fmt.Errorf("%w: issuer epoch exhausted", ErrInvalidInput)
	}
	m.IssuerEpoch++
	m.Revision++
	return m, tx.PutMeta(m)
}

// ApplyFenceFloor raises the global floor (resource "") or a resource's
// floor to at least floor. It never lowers a floor or a fence.
func ApplyFenceFloor(tx Tx, resource string, floor uint64) (Meta, ResourceRecord, error) {
	m, err := loadMeta(tx)
	if err != nil {
		return m, ResourceRecord{}, err
	}
	m.Revision++
	if resource == "" {
		m.FenceFloor = max(m.FenceFloor, floor)
		return m, ResourceRecord{}, tx.PutMeta(m)
	}
	rec, _, err := tx.Resource(resource)
	if err != nil {
		return m, rec, err
	}
	rec.Resource = resource
	rec.FenceFloor = max(rec.FenceFloor, floor)
	if err := tx.PutResource(rec); err != nil {
		return m, rec, err
	}
	return m, rec, tx.PutMeta(m)
}

// ApplyPutPolicy stores p with a new generation.
func ApplyPutPolicy(tx Tx, p Policy, now time.Time) (Policy, error) {
	if err := p.Validate(); err != nil {
		return Policy{}, err
	}
	m, err := loadMeta(tx)
	if err != nil {
		return Policy{}, err
	}
	m.PolicySeq++
	m.Revision++
	p.Generation = m.PolicySeq
	p.UpdatedAt = ms(now)
	p.Deleted = false
	if err := tx.PutPolicy(p); err != nil {
		return Policy{}, err
	}
	return p, tx.PutMeta(m)
}

// ApplyDeletePolicy replaces a policy with a tombstone of a new generation.
func ApplyDeletePolicy(tx Tx, pattern string, now time.Time) (Policy, error) {
	ps, err := tx.Policies()
	if err != nil {
		return Policy{}, err
	}
	for _, p := range ps {
		if p.Pattern == pattern && !p.Deleted {
			out, err := ApplyPutPolicy(tx, Policy{Pattern: pattern}, now)
			if err != nil {
				return out, err
			}
			out.Deleted = true
			return out, tx.PutPolicy(out)
		}
	}
	return Policy{}, fmt.Errorf("%w: policy %q", ErrNotFound, pattern)
}

// errCompactLimit stops the lease walk once limit leases are collected.
var errCompactLimit = errors.New("registry: compact limit reached")

// ApplyCompact deletes up to limit leases whose stored state is not HELD
// and that ended before endedBefore. Resource records keep their fence
// sequence; a holder pointer to a deleted lease reads as "no holder".
func ApplyCompact(tx Tx, endedBefore time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, fmt.Errorf("%w: compact limit must be positive", ErrInvalidInput)
	}
	cut := ms(endedBefore)
	var old []LeaseRecord
	err := tx.EachLease(func(l LeaseRecord) error {
		if l.State != verify.StateHeld && l.EndedAt < cut {
			old = append(old, l)
			if len(old) >= limit {
				return errCompactLimit
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errCompactLimit) {
		return 0, err
	}
	for _, l := range old {
		if err := tx.DeleteLease(l); err != nil {
			return 0, err
		}
	}
	return len(old), nil
}
