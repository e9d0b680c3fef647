package registry

import (
	"fmt"
	"math"

	"github.com/fencegate/fencegate"
)

// DecideAcquire is Acquire's decision, a pure function shared by every
// backend: snap is what the backend read (see AcquireSnapshot), the result
// is the answer and the Change what to write in the same atomic step. A
// granting Change carries the new lease unsealed in Change.Grant: the
// backend seals it with SealGrant, then writes. The check order and why it
// reads what it reads are in the package comment.
func DecideAcquire(snap AcquireSnapshot, in AcquireInput) (AcquireResult, Change, error) {
	if err := in.validate(); err != nil {
		return AcquireResult{}, Change{}, err
	}
	m := snap.Meta.current()
	pol := snap.Policy
	// The time it decides at: the process's clock raised toward the
	// registry's (time.go).
	at := DecisionTime(in.Now, m, in.MaxSkew)

	// 1. Idempotency: the same (owner, requestId) gets the same grant,
	// whatever its state and the resource's now.
	if snap.RequestIndex != "" {
		l := snap.Requested
		if l == nil {
			return AcquireResult{}, Change{}, fmt.Errorf("%w: request index points to missing lease %s", ErrBackend, snap.RequestIndex)
		}
		if l.Lease != snap.RequestIndex || l.Owner != in.Owner || l.RequestID != in.RequestID {
			return AcquireResult{}, Change{}, fmt.Errorf("%w: request index of %q names lease %s of %s/%s", ErrBackend, in.RequestID, l.Lease, l.Owner, l.RequestID)
		}
		if l.Resource != in.Resource || l.OpClass != in.OpClass {
			return AcquireResult{}, Change{}, fmt.Errorf("%w: request %q was for %s", ErrRequestConflict, in.RequestID, l.Resource)
		}
		return AcquireResult{Existing: true, View: view(*l, m, pol.Generation, at), At: at, Meta: m}, Change{}, nil
	}

	// 2. The resource's policy.
	if err := CheckPolicy(pol, in.Owner, in.OpClass, in.TTL); err != nil {
		return AcquireResult{}, Change{}, err
	}

	// 3. The current holder: busy while HELD; otherwise its end is recorded.
	rec := snap.Resource
	if rec.Resource != "" && rec.Resource != in.Resource {
		return AcquireResult{}, Change{}, fmt.Errorf("%w: record of %q read for %q", ErrBackend, rec.Resource, in.Resource)
	}
	rec.Resource = in.Resource
	var ch Change
	res := AcquireResult{FreedAt: rec.FreedAt, At: at, Meta: m}
	if h := snap.Holder; rec.Holder != "" && h != nil {
		if h.Lease != rec.Holder || h.Resource != in.Resource {
			return AcquireResult{}, Change{}, fmt.Errorf("%w: holder %s of %q read as lease %s of %q", ErrBackend, rec.Holder, in.Resource, h.Lease, h.Resource)
		}
		st := LeaseState(*h, m, pol.Generation, at)
		if st == fencegate.StateHeld {
			busy := *h
			busy.Token, busy.Digest = "", ""
			return AcquireResult{Busy: true, Holder: busy, At: at, Meta: m}, Change{}, nil
		}
		if h.State == fencegate.StateHeld { // observed expiry or revocation
			ended := *h
			ended.State = st
			ended.EndedAt = endedAt(ended, st, at)
			ch.Leases = append(ch.Leases, ended)
			res.Ended = &ended
			res.FreedAt = ended.EndedAt
		}
	}

	// 4. The next fence: above every fence issued and both floors.
	base := max(rec.LastFence, rec.FenceFloor, m.FenceFloor)
	if base == math.MaxUint64 {
		return AcquireResult{}, Change{}, ErrFenceExhausted
	}
	// 5. The lineage the grant carries: the meta's, set now by the first
	// grant of a data set that has none (never started with DecideInit).
	if m.Lineage == "" {
		if err := fencegate.ValidateLineage(in.Lineage); err != nil {
			return AcquireResult{}, Change{}, fmt.Errorf("%w: the registry has no lineage yet and the acquire brought none: %v", ErrInvalidInput, err)
		}
		m.Lineage = in.Lineage
	}
	fence := base + 1
	m.Revision++
	m.raiseTime(at)
	now := ms(at)
	l := LeaseRecord{
		Lease:            in.LeaseID,
		GrantID:          in.GrantID,
		Resource:         in.Resource,
		Owner:            in.Owner,
		RequestID:        in.RequestID,
		OpClass:          in.OpClass,
		Lineage:          m.Lineage,
		Fence:            fence,
		IssuerEpoch:      m.IssuerEpoch,
		PolicyGeneration: pol.Generation,
		Revision:         m.Revision,
		TTLMs:            uint64(in.TTL.Milliseconds()),
		IssuedAt:         now,
		ExpiresAt:        now + in.TTL.Milliseconds(),
		State:            fencegate.StateHeld,
	}
	rec.LastFence = fence
	rec.Holder = l.Lease
	rec.FreedAt = 0
	ch.Meta = &m
	ch.Resource = &rec
	grant := l
	ch.Grant = &grant
	res.Granted = true
	res.View = view(l, m, pol.Generation, at)
	return res, ch, nil
}
