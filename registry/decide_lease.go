package registry

import (
	"fmt"
	"math"
	"time"

	"github.com/fencegate/fencegate"
)

// DecideRenew is Renew's decision, a pure function over snap (see
// LeaseSnapshot), at DecisionTime(in.Now, snap.Meta, in.MaxSkew). A HELD
// lease is extended by in.TTL from then, or by its own TTL (the ttlMs of
// its grant) when in.TTL is zero; the policy's TTL bounds apply either
// way. A lease that is no longer held is refused (NotHeld), never
// re-granted, and the change records its observed end. Either change
// raises the registry's time to the decision's.
func DecideRenew(snap LeaseSnapshot, in RenewInput) (RenewResult, Change, error) {
	if in.TTL < 0 || (in.TTL > 0 && in.TTL < time.Millisecond) {
		return RenewResult{}, Change{}, fmt.Errorf("%w: renew ttl %s: want 0 (the lease's own) or at least 1ms", ErrInvalidInput, in.TTL)
	}
	l, err := snap.owned(in.Lease, in.Owner)
	if err != nil {
		return RenewResult{}, Change{}, err
	}
	m, gen := snap.Meta.current(), snap.Policy.Generation
	at := DecisionTime(in.Now, m, in.MaxSkew)
	if st := LeaseState(l, m, gen, at); st != fencegate.StateHeld {
		ch := closeLease(&l, snap.Resource, st, endedAt(l, st, at))
		res := RenewResult{View: view(l, m, gen, at), NotHeld: true}
		stampTime(&ch, m, at)
		return res, ch, nil
	}
	ttl := in.TTL
	if ttl == 0 {
		if l.TTLMs == 0 || l.TTLMs > math.MaxInt64/uint64(time.Millisecond) {
			return RenewResult{}, Change{}, fmt.Errorf("%w: lease %s has no usable TTL (%dms) to renew by", ErrBackend, l.Lease, l.TTLMs)
		}
		ttl = time.Duration(l.TTLMs) * time.Millisecond
	}
	if err := CheckPolicy(snap.Policy, l.Owner, l.OpClass, ttl); err != nil {
		return RenewResult{}, Change{}, err
	}
	m.Revision++
	l.ExpiresAt = ms(at) + ttl.Milliseconds()
	res := RenewResult{View: view(l, m, gen, at)}
	ch := Change{Meta: &m, Leases: []LeaseRecord{l}}
	stampTime(&ch, m, at)
	return res, ch, nil
}

// DecideRelease is Release's decision, a pure function over snap. A HELD
// lease becomes RELEASED and frees its resource; a lease that is no longer
// held keeps its state (its observed end is recorded if not yet written):
// a release is idempotent and never turns an expired lease into a
// released one.
func DecideRelease(snap LeaseSnapshot, in ReleaseInput) (ReleaseResult, Change, error) {
	l, err := snap.owned(in.Lease, in.Owner)
	if err != nil {
		return ReleaseResult{}, Change{}, err
	}
	m, gen := snap.Meta.current(), snap.Policy.Generation
	at := DecisionTime(in.Now, m, in.MaxSkew)
	ch, released := endLease(&l, snap.Resource, &m, gen, fencegate.StateReleased, at)
	res := ReleaseResult{View: view(l, m, gen, at), Released: released}
	stampTime(&ch, m, at)
	return res, ch, nil
}

// endLease ends l as to when it is held at now (a write of its own: the
// revision counts it, and the Change carries m), and reports that it did;
// a lease that is no longer held keeps its state, and the Change records
// the end it already had (expired or revoked) if not yet written. Release
// and revocation share it, so neither turns an ended lease into another
// end.
func endLease(l *LeaseRecord, rec *ResourceRecord, m *Meta, gen uint64, to string, now time.Time) (Change, bool) {
	switch st := LeaseState(*l, *m, gen, now); st {
	case fencegate.StateHeld:
		m.Revision++
		ch := closeLease(l, rec, to, ms(now))
		ch.Meta = m
		return ch, true
	case fencegate.StateExpired, fencegate.StateRevoked:
		return closeLease(l, rec, st, endedAt(*l, st, now)), false
	}
	return Change{}, false
}

// DecideStatus is a status read over snap: the lease with its effective
// state at DecisionTime(q.Now, snap.Meta, q.MaxSkew) and the registry's
// current values. It writes nothing (so it does not raise the registry's
// time), but it never answers at a time before it, within the budget.
func DecideStatus(snap LeaseSnapshot, q LeaseQuery) (LeaseView, error) {
	if snap.Lease == nil {
		return LeaseView{}, fmt.Errorf("%w: lease", ErrNotFound)
	}
	m := snap.Meta.current()
	return view(*snap.Lease, m, snap.Policy.Generation, DecisionTime(q.Now, m, q.MaxSkew)), nil
}

// DecideResource is a resource read over snap: its record (a resource
// never granted reads as fence 0) and its holder with its state at now.
func DecideResource(snap ResourceSnapshot, resource string, now time.Time) (ResourceView, error) {
	rec := snap.Resource
	if rec.Resource == "" {
		rec.Resource = resource
	}
	if rec.Resource != resource {
		return ResourceView{}, fmt.Errorf("%w: record of %q read for %q", ErrBackend, rec.Resource, resource)
	}
	m, gen := snap.Meta.current(), snap.Policy.Generation
	v := ResourceView{Record: rec, PolicyGeneration: gen, Meta: m}
	if h := snap.Holder; rec.Holder != "" && h != nil {
		if h.Lease != rec.Holder {
			return ResourceView{}, fmt.Errorf("%w: holder %s of %q read as lease %s", ErrBackend, rec.Holder, resource, h.Lease)
		}
		hv := view(*h, m, gen, now)
		v.Holder = &hv
	}
	return v, nil
}

// owned is the snapshot's lease for a renew or release by owner.
func (s LeaseSnapshot) owned(id, owner string) (LeaseRecord, error) {
	switch {
	case s.Lease == nil:
		return LeaseRecord{}, fmt.Errorf("%w: lease %q", ErrNotFound, id)
	case s.Lease.Lease != id:
		return LeaseRecord{}, fmt.Errorf("%w: lease %q read as %q", ErrBackend, id, s.Lease.Lease)
	case s.Resource != nil && s.Resource.Resource != s.Lease.Resource:
		return LeaseRecord{}, fmt.Errorf("%w: record of %q read for lease %s of %q", ErrBackend, s.Resource.Resource, id, s.Lease.Resource)
	case s.Lease.Owner != owner:
		return LeaseRecord{}, fmt.Errorf("%w: lease %q", ErrNotOwner, id)
	}
	return *s.Lease, nil
}

// closeLease records the end of a lease whose stored state is still HELD
// (state st at end) and frees its resource when the lease is its holder.
// A lease whose end is already stored changes nothing.
func closeLease(l *LeaseRecord, rec *ResourceRecord, st string, end int64) Change {
	if l.State != fencegate.StateHeld {
		return Change{}
	}
	l.State, l.EndedAt = st, end
	ch := Change{Leases: []LeaseRecord{*l}}
	if rec != nil && rec.Holder == l.Lease {
		r := *rec
		r.FreedAt = end
		ch.Resource = &r
	}
	return ch
}
