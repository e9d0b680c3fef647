package registry

import (
	"fmt"
	"math"
	"time"

	"github.com/fencegate/fencegate"
)

// DecideBumpEpoch increments the issuer epoch read in m: every grant of an
// older epoch reads REVOKED from then on.
func DecideBumpEpoch(m Meta) (Meta, Change, error) {
	m = m.current()
	if m.IssuerEpoch == math.MaxUint64 {
		return m, Change{}, fmt.Errorf("%w: issuer epoch exhausted", ErrInvalidInput)
	}
	m.IssuerEpoch++
	m.Revision++
	out := m
	return m, Change{Meta: &out}, nil
}

// InitInput is what a registry process does at start, before serving:
// give the data set its lineage if it has none, raise the global fence
// floor to at least FenceFloor and the issuer epoch to at least
// MinIssuerEpoch (0: leave them).
type InitInput struct {
	// Lineage is a fresh random lineage, used only when the meta has none.
	Lineage        string
	FenceFloor     uint64
	MinIssuerEpoch uint64
}

// DecideInit is the start of a registry process over the meta m: the meta
// gets in.Lineage when it has no lineage yet (an empty data set, or one of
// a version before lineages), and the global floor is raised to
// in.FenceFloor when that is higher, and the issuer epoch to
// in.MinIssuerEpoch when that is higher (revoking every grant of an older
// epoch, as a bump does). It never changes a lineage and never lowers a
// floor or an epoch; when nothing changes it writes nothing.
func DecideInit(m Meta, in InitInput) (Meta, Change, error) {
	m = m.current()
	changed := false
	if m.Lineage == "" {
		if err := fencegate.ValidateLineage(in.Lineage); err != nil {
			return Meta{}, Change{}, fmt.Errorf("%w: %v", ErrInvalidInput, err)
		}
		m.Lineage, changed = in.Lineage, true
	}
	if in.FenceFloor > m.FenceFloor {
		m.FenceFloor, changed = in.FenceFloor, true
	}
	if in.MinIssuerEpoch > m.IssuerEpoch {
		m.IssuerEpoch, changed = in.MinIssuerEpoch, true
	}
	if !changed {
		return m, Change{}, nil
	}
	m.Revision++
	out := m
	return m, Change{Meta: &out}, nil
}

// DecideFenceFloor raises the global floor (in.Resource "") or a
// resource's floor to at least in.Floor. It never lowers a floor, and
// never touches a resource's LastFence: the next fence is above both.
func DecideFenceFloor(snap FenceFloorSnapshot, in FenceFloorInput) (Meta, ResourceRecord, Change, error) {
	m := snap.Meta.current()
	m.Revision++
	if in.Resource == "" {
		m.FenceFloor = max(m.FenceFloor, in.Floor)
		out := m
		return m, ResourceRecord{}, Change{Meta: &out}, nil
	}
	rec := snap.Resource
	if rec.Resource != "" && rec.Resource != in.Resource {
		return Meta{}, ResourceRecord{}, Change{}, fmt.Errorf("%w: record of %q read for %q", ErrBackend, rec.Resource, in.Resource)
	}
	rec.Resource = in.Resource
	rec.FenceFloor = max(rec.FenceFloor, in.Floor)
	outM, outR := m, rec
	return m, rec, Change{Meta: &outM, Resource: &outR}, nil
}

// DecidePutPolicy stores p with the next policy generation. Every grant
// issued under the resource's previous generation reads REVOKED from then
// on.
func DecidePutPolicy(m Meta, p fencegate.Policy, now time.Time) (fencegate.Policy, Change, error) {
	if err := ValidatePolicy(p); err != nil {
		return fencegate.Policy{}, Change{}, err
	}
	m = m.current()
	m.PolicySeq++
	m.Revision++
	m.raiseTime(now)
	p.Generation = m.PolicySeq
	p.UpdatedAt = ms(now)
	p.Deleted = false
	outP := p
	return p, Change{Meta: &m, Policy: &outP}, nil
}

// DecideDeletePolicy replaces the policy of pattern (snap.Existing) with a
// tombstone of the next generation, which matches like a policy that
// allows everything, so that generations never go back.
func DecideDeletePolicy(snap PolicySnapshot, pattern string, now time.Time) (fencegate.Policy, Change, error) {
	if p := snap.Existing; p == nil || p.Deleted || p.Pattern != pattern {
		return fencegate.Policy{}, Change{}, fmt.Errorf("%w: policy %q", ErrNotFound, pattern)
	}
	out, ch, err := DecidePutPolicy(snap.Meta, fencegate.Policy{Pattern: pattern}, now)
	if err != nil {
		return fencegate.Policy{}, Change{}, err
	}
	out.Deleted = true
	tomb := out
	ch.Policy = &tomb
	return out, ch, nil
}

// Compactable reports whether compaction may delete l: its end is stored
// (released, expired or revoked) before endedBefore. A lease still stored
// HELD is never compacted, whatever its expiry.
func Compactable(l LeaseRecord, endedBefore time.Time) bool {
	return l.State != fencegate.StateHeld && l.EndedAt < ms(endedBefore)
}

// Validate checks a compaction's input.
func (in CompactInput) Validate() error {
	if in.Limit <= 0 {
		return fmt.Errorf("%w: compact limit must be positive", ErrInvalidInput)
	}
	return nil
}

// DecideCompact deletes the Compactable leases of snap, at most in.Limit.
// Resource records keep their fence sequence; a holder pointer to a
// deleted lease reads as "no holder".
func DecideCompact(snap CompactSnapshot, in CompactInput) (int, Change, error) {
	if err := in.Validate(); err != nil {
		return 0, Change{}, err
	}
	var ch Change
	for _, l := range snap.Leases {
		if len(ch.Delete) == in.Limit {
			break
		}
		if Compactable(l, in.EndedBefore) {
			ch.Delete = append(ch.Delete, l)
		}
	}
	return len(ch.Delete), ch, nil
}
