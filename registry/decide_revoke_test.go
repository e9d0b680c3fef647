package registry_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/registry"
)

// revokeSnap is held() with its resource's record (held by it) and the
// meta at epoch 2, revision 41, policy generation 3.
func revokeSnap() registry.LeaseSnapshot {
	h := held()
	return registry.LeaseSnapshot{
		Meta:     registry.Meta{IssuerEpoch: 2, Revision: 41, PolicySeq: 3, Lineage: metaLineage},
		Lease:    &h,
		Resource: &registry.ResourceRecord{Resource: "r", LastFence: 7, Holder: h.Lease},
		Policy:   fencegate.Policy{Pattern: "r", Generation: 3},
	}
}

// TestDecideRevokeHeld: a HELD lease is stored REVOKED at now, its
// resource freed at now with its LastFence kept, and the revision moves
// on; the view says REVOKED.
func TestDecideRevokeHeld(t *testing.T) {
	now := t0.Add(300 * time.Millisecond)
	res, ch, err := registry.DecideRevoke(revokeSnap(), registry.RevokeInput{Lease: "lease-7", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Revoked || res.View.State != fencegate.StateRevoked {
		t.Fatalf("revoke of a HELD lease: revoked %v state %s", res.Revoked, res.View.State)
	}
	want := held()
	want.State, want.EndedAt = fencegate.StateRevoked, now.UnixMilli()
	if len(ch.Leases) != 1 || !reflect.DeepEqual(ch.Leases[0], want) {
		t.Errorf("lease written %+v, want %+v", ch.Leases, want)
	}
	if ch.Resource == nil || ch.Resource.LastFence != 7 || ch.Resource.FreedAt != now.UnixMilli() || ch.Resource.Holder != "lease-7" {
		t.Errorf("resource written %+v: want LastFence 7 kept, FreedAt %d", ch.Resource, now.UnixMilli())
	}
	if ch.Meta == nil || ch.Meta.Revision != 42 || ch.Meta.IssuerEpoch != 2 {
		t.Errorf("meta written %+v: want revision 42, epoch 2 kept", ch.Meta)
	}
	if ch.Grant != nil || ch.Policy != nil || len(ch.Delete) != 0 {
		t.Errorf("revoke wrote more than the lease, its resource and the meta: %+v", ch)
	}
}

// TestDecideRevokeEnded: revoking a lease that is no longer held changes
// nothing it already stored: a released one writes nothing, an expired or
// epoch-revoked one has its observed end recorded (as a release does), and
// none is counted as revoked by this call.
func TestDecideRevokeEnded(t *testing.T) {
	late := t0.Add(5 * time.Second)
	for _, c := range []struct {
		name      string
		edit      func(*registry.LeaseSnapshot)
		now       time.Time
		wantState string
		wantWrite bool
	}{
		{"released", func(s *registry.LeaseSnapshot) {
			s.Lease.State, s.Lease.EndedAt = fencegate.StateReleased, t0.UnixMilli()
		}, late, fencegate.StateReleased, false},
		{"revoked", func(s *registry.LeaseSnapshot) {
			s.Lease.State, s.Lease.EndedAt = fencegate.StateRevoked, t0.UnixMilli()
		}, late, fencegate.StateRevoked, false},
		{"expired", func(*registry.LeaseSnapshot) {}, late, fencegate.StateExpired, true},
		{"epoch bumped", func(s *registry.LeaseSnapshot) { s.Meta.IssuerEpoch = 3 }, t0, fencegate.StateRevoked, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			snap := revokeSnap()
			c.edit(&snap)
			res, ch, err := registry.DecideRevoke(snap, registry.RevokeInput{Lease: "lease-7", Now: c.now})
			if err != nil {
				t.Fatal(err)
			}
			if res.Revoked || res.View.State != c.wantState {
				t.Errorf("revoked %v state %s, want false %s", res.Revoked, res.View.State, c.wantState)
			}
			if c.wantWrite && !onlyTimeRaised(snap.Meta, ch.Meta, c.now) || !c.wantWrite && ch.Meta != nil {
				t.Errorf("revoke of an ended lease moved the meta: %+v", ch.Meta)
			}
			if got := !ch.Empty(); got != c.wantWrite {
				t.Errorf("writes %v (%+v), want %v", got, ch, c.wantWrite)
			}
			if c.wantWrite && (len(ch.Leases) != 1 || ch.Leases[0].State != c.wantState) {
				t.Errorf("observed end written as %+v, want state %s", ch.Leases, c.wantState)
			}
		})
	}
}

// TestDecideRevokeRefusals: a missing lease is NOT_FOUND, a snapshot of
// another lease or another resource is a backend failure; none writes.
func TestDecideRevokeRefusals(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*registry.LeaseSnapshot)
		want error
	}{
		{"missing", func(s *registry.LeaseSnapshot) { s.Lease = nil }, registry.ErrNotFound},
		{"other lease", func(s *registry.LeaseSnapshot) { s.Lease.Lease = "lease-8" }, registry.ErrBackend},
		{"other resource", func(s *registry.LeaseSnapshot) { s.Resource.Resource = "q" }, registry.ErrBackend},
	} {
		t.Run(c.name, func(t *testing.T) {
			snap := revokeSnap()
			c.edit(&snap)
			_, ch, err := registry.DecideRevoke(snap, registry.RevokeInput{Lease: "lease-7", Now: t0})
			if !errors.Is(err, c.want) {
				t.Errorf("error %v, want %v", err, c.want)
			}
			if !ch.Empty() {
				t.Errorf("refusal writes %+v", ch)
			}
		})
	}
}

// TestDecideAcquireAfterRevoke: once revoked, the resource is granted to
// another owner at once, with the next fence (never a lower one).
func TestDecideAcquireAfterRevoke(t *testing.T) {
	now := t0.Add(100 * time.Millisecond)
	_, ch, err := registry.DecideRevoke(revokeSnap(), registry.RevokeInput{Lease: "lease-7", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	snap := acquireSnap()
	snap.Meta, snap.Resource, snap.Holder = *ch.Meta, *ch.Resource, &ch.Leases[0]
	in := acquireIn("owner-b", "req-b")
	in.Now = now
	res, _, err := registry.DecideAcquire(snap, in)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Granted || res.View.Lease.Fence != 8 {
		t.Errorf("acquire after revoke: granted %v fence %d, want a grant at fence 8", res.Granted, res.View.Lease.Fence)
	}
}
