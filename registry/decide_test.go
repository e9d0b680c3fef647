package registry_test

import (
	"errors"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/registry"
)

var t0 = time.UnixMilli(1_800_000_000_000).UTC()

// held is a HELD lease of resource r, fence 7, epoch 2, policy generation
// 3, expiring one second after t0.
func held() registry.LeaseRecord {
	return registry.LeaseRecord{Lease: "lease-7", GrantID: "g-7", Resource: "r", Owner: "owner-a", RequestID: "req-7", OpClass: "write",
		Fence: 7, IssuerEpoch: 2, PolicyGeneration: 3, Revision: 40, TTLMs: 1000, IssuedAt: t0.UnixMilli(), ExpiresAt: t0.UnixMilli() + 1000,
		State: fencegate.StateHeld, Token: "tok-7", Digest: "sha256:7"}
}

func acquireIn(owner, requestID string) registry.AcquireInput {
	return registry.AcquireInput{Resource: "r", Owner: owner, RequestID: requestID, OpClass: "write", TTL: time.Second,
		Issuer: "iss", LeaseID: "lease-new", GrantID: "g-new", Lineage: candidateLineage, Now: t0}
}

// The data set's lineage in the snapshots, and the fresh one an acquire
// brings (used only by a data set without one).
const (
	metaLineage      = "0123456789abcdef0123456789abcdef"
	candidateLineage = "fedcba9876543210fedcba9876543210"
)

// acquireSnap is resource r held by held() at fence 7, floors 0, meta at
// epoch 2, revision 41, policy generation 3.
func acquireSnap() registry.AcquireSnapshot {
	h := held()
	return registry.AcquireSnapshot{
		Meta:     registry.Meta{IssuerEpoch: 2, Revision: 41, PolicySeq: 3, Lineage: metaLineage},
		Policy:   fencegate.Policy{Pattern: "r", Generation: 3},
		Resource: registry.ResourceRecord{Resource: "r", LastFence: 7, Holder: h.Lease},
		Holder:   &h,
	}
}

// TestDecideAcquireTable is the acquire decision table: what each snapshot
// answers and what it writes. Every refusal writes nothing.
func TestDecideAcquireTable(t *testing.T) {
	at := func(d time.Duration) registry.AcquireInput {
		in := acquireIn("owner-b", "req-b")
		in.Now = t0.Add(d)
		return in
	}
	for _, c := range []struct {
		name string
		snap func(*registry.AcquireSnapshot)
		in   registry.AcquireInput
		// want: "granted", "existing", "busy" or the error.
		want      string
		err       error
		fence     uint64
		endedWith string // the holder's written end state, "" for none
	}{
		{"held: busy", nil, at(0), "busy", nil, 0, ""},
		{"held until the last ms: busy", nil, at(999 * time.Millisecond), "busy", nil, 0, ""},
		{"expired: granted, holder closed EXPIRED", nil, at(time.Second), "granted", nil, 8, fencegate.StateExpired},
		{"older epoch: granted, holder closed REVOKED", func(s *registry.AcquireSnapshot) { s.Meta.IssuerEpoch = 3 }, at(0), "granted", nil, 8, fencegate.StateRevoked},
		{"policy changed: granted, holder closed REVOKED", func(s *registry.AcquireSnapshot) { s.Policy.Generation = 4 }, at(0), "granted", nil, 8, fencegate.StateRevoked},
		{"released: granted, nothing to close", func(s *registry.AcquireSnapshot) { s.Holder.State = fencegate.StateReleased }, at(0), "granted", nil, 8, ""},
		{"holder compacted: granted", func(s *registry.AcquireSnapshot) { s.Holder = nil }, at(0), "granted", nil, 8, ""},
		{"never granted: fence 1", func(s *registry.AcquireSnapshot) { s.Resource, s.Holder = registry.ResourceRecord{}, nil }, at(0), "granted", nil, 1, ""},
		{"resource floor above last fence", func(s *registry.AcquireSnapshot) {
			s.Resource.FenceFloor = 100
			s.Holder.State = fencegate.StateReleased
		}, at(0), "granted", nil, 101, ""},
		{"global floor above all", func(s *registry.AcquireSnapshot) {
			s.Meta.FenceFloor, s.Resource.FenceFloor = 200, 100
			s.Holder.State = fencegate.StateReleased
		}, at(0), "granted", nil, 201, ""},
		{"floor below last fence changes nothing", func(s *registry.AcquireSnapshot) { s.Meta.FenceFloor = 3; s.Holder.State = fencegate.StateReleased }, at(0), "granted", nil, 8, ""},
		{"fence exhausted", func(s *registry.AcquireSnapshot) {
			s.Resource.LastFence = math.MaxUint64
			s.Holder.State = fencegate.StateReleased
		}, at(0), "", registry.ErrFenceExhausted, 0, ""},
		{"policy denies the owner", func(s *registry.AcquireSnapshot) { s.Policy.AllowedOwners = []string{"owner-a"} }, at(time.Second), "", registry.ErrPolicyDenied, 0, ""},
		{"data set without a lineage: the grant gives it the acquire's", func(s *registry.AcquireSnapshot) {
			s.Meta.Lineage = ""
			s.Holder.State = fencegate.StateReleased
		}, at(0), "granted", nil, 8, ""},
		{"no lineage anywhere: refused", func(s *registry.AcquireSnapshot) {
			s.Meta.Lineage = ""
			s.Holder.State = fencegate.StateReleased
		}, func() registry.AcquireInput { in := at(0); in.Lineage = ""; return in }(), "", registry.ErrInvalidInput, 0, ""},
		{"malformed candidate lineage: refused", func(s *registry.AcquireSnapshot) {
			s.Meta.Lineage = ""
			s.Holder.State = fencegate.StateReleased
		}, func() registry.AcquireInput { in := at(0); in.Lineage = "NOT-HEX"; return in }(), "", registry.ErrInvalidInput, 0, ""},
		{"same request: existing, even while held", func(s *registry.AcquireSnapshot) {
			s.RequestIndex, s.Requested = "lease-7", s.Holder
		}, func() registry.AcquireInput { in := acquireIn("owner-a", "req-7"); return in }(), "existing", nil, 7, ""},
		{"same request, other resource: conflict", func(s *registry.AcquireSnapshot) {
			l := held()
			l.Resource = "other"
			s.RequestIndex, s.Requested = "lease-7", &l
		}, acquireIn("owner-a", "req-7"), "", registry.ErrRequestConflict, 0, ""},
		{"same request, other op class: conflict", func(s *registry.AcquireSnapshot) {
			s.RequestIndex, s.Requested = "lease-7", s.Holder
		}, func() registry.AcquireInput { in := acquireIn("owner-a", "req-7"); in.OpClass = "read"; return in }(), "", registry.ErrRequestConflict, 0, ""},
		{"request index to a missing lease", func(s *registry.AcquireSnapshot) { s.RequestIndex = "lease-gone" }, acquireIn("owner-a", "req-7"), "", registry.ErrBackend, 0, ""},
		{"holder read as another lease", func(s *registry.AcquireSnapshot) { s.Holder.Lease = "lease-x" }, at(time.Second), "", registry.ErrBackend, 0, ""},
		{"record of another resource", func(s *registry.AcquireSnapshot) { s.Resource.Resource = "r2" }, at(time.Second), "", registry.ErrBackend, 0, ""},
		{"bad input", nil, func() registry.AcquireInput { in := at(0); in.TTL = 0; return in }(), "", registry.ErrInvalidInput, 0, ""},
	} {
		snap := acquireSnap()
		if c.snap != nil {
			c.snap(&snap)
		}
		res, ch, err := registry.DecideAcquire(snap, c.in)
		if c.err != nil {
			if !errors.Is(err, c.err) || !ch.Empty() {
				t.Errorf("%s: err %v, change %+v; want %v and no change", c.name, err, ch, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		got := map[bool]string{true: "granted"}[res.Granted] + map[bool]string{true: "existing"}[res.Existing] + map[bool]string{true: "busy"}[res.Busy]
		if got != c.want {
			t.Errorf("%s: answered %q, want %q", c.name, got, c.want)
			continue
		}
		switch c.want {
		case "busy":
			if !ch.Empty() || res.Holder.Lease != "lease-7" || res.Holder.Token != "" || res.Holder.Digest != "" {
				t.Errorf("%s: busy wrote %+v, holder %+v (token and digest must be blanked)", c.name, ch, res.Holder)
			}
		case "existing":
			if !ch.Empty() || res.View.Lease.Fence != c.fence || res.View.Lease.Token != "tok-7" {
				t.Errorf("%s: existing wrote %+v, view %+v", c.name, ch, res.View)
			}
		case "granted":
			checkGrant(t, c.name, snap, c.in, res, ch, c.fence, c.endedWith)
		}
	}
}

// checkGrant checks a granting decision: the lease is HELD at the fence,
// stamped with the new revision, the current epoch and policy generation;
// the change writes the meta, the record (holder, last fence) and the
// unsealed grant, plus the holder's end when it was still stored HELD.
func checkGrant(t *testing.T, name string, snap registry.AcquireSnapshot, in registry.AcquireInput, res registry.AcquireResult, ch registry.Change, fence uint64, endedWith string) {
	t.Helper()
	epoch := max(snap.Meta.IssuerEpoch, 1)
	l := res.View.Lease
	if l.Fence != fence || l.Lease != in.LeaseID || l.GrantID != in.GrantID || l.State != fencegate.StateHeld || res.View.State != fencegate.StateHeld ||
		l.IssuerEpoch != epoch || l.PolicyGeneration != snap.Policy.Generation || l.Revision != snap.Meta.Revision+1 ||
		l.ExpiresAt != in.Now.UnixMilli()+1000 || l.Token != "" || l.Digest != "" {
		t.Errorf("%s: granted %+v (state %s), want fence %d", name, l, res.View.State, fence)
	}
	if ch.Grant == nil || *ch.Grant != l {
		t.Errorf("%s: change grants %+v, result says %+v", name, ch.Grant, l)
	}
	if ch.Meta == nil || ch.Meta.Revision != snap.Meta.Revision+1 || ch.Meta.IssuerEpoch != epoch {
		t.Errorf("%s: change meta %+v", name, ch.Meta)
	}
	// The grant carries the data set's lineage; a data set without one
	// takes the acquire's, in the same change, and never changes it after.
	wantLineage := snap.Meta.Lineage
	if wantLineage == "" {
		wantLineage = in.Lineage
	}
	if l.Lineage != wantLineage || ch.Meta == nil || ch.Meta.Lineage != wantLineage {
		t.Errorf("%s: grant lineage %q, meta lineage %+v, want %q", name, l.Lineage, ch.Meta, wantLineage)
	}
	if r := ch.Resource; r == nil || r.Resource != "r" || r.LastFence != fence || r.Holder != in.LeaseID || r.FreedAt != 0 ||
		r.FenceFloor != snap.Resource.FenceFloor {
		t.Errorf("%s: change record %+v", name, ch.Resource)
	}
	if endedWith == "" {
		if len(ch.Leases) != 0 || res.Ended != nil {
			t.Errorf("%s: closed %+v, want nothing closed", name, ch.Leases)
		}
		return
	}
	if len(ch.Leases) != 1 || ch.Leases[0].Lease != "lease-7" || ch.Leases[0].State != endedWith || res.Ended == nil || *res.Ended != ch.Leases[0] {
		t.Fatalf("%s: closed %+v (ended %+v), want lease-7 %s", name, ch.Leases, res.Ended, endedWith)
	}
	want := in.Now.UnixMilli()
	if endedWith == fencegate.StateExpired {
		want = snap.Holder.ExpiresAt
	}
	if ch.Leases[0].EndedAt != want || res.FreedAt != want {
		t.Errorf("%s: holder ended at %d, freed at %d, want %d", name, ch.Leases[0].EndedAt, res.FreedAt, want)
	}
}

// A granting change is written only once sealed: SealGrant signs the
// claims of the record and sets its token and digest in the change and in
// the result.
func TestSealGrant(t *testing.T) {
	snap := acquireSnap()
	snap.Holder.State = fencegate.StateReleased
	in := acquireIn("owner-b", "req-b")
	res, ch, err := registry.DecideAcquire(snap, in)
	if err != nil {
		t.Fatal(err)
	}
	var signed fencegate.Grant
	err = registry.SealGrant(&res, &ch, in.Issuer, func(c *fencegate.Grant) ([]byte, error) { signed = *c; return []byte("jws"), nil })
	if err != nil {
		t.Fatal(err)
	}
	if signed != registry.GrantClaims(res.View.Lease, "iss") || signed.FenceToken != 8 || signed.Issuer != "iss" || signed.Lineage != metaLineage ||
		signed.OperationRoot != registry.OperationRoot("r", 8, "g-new") {
		t.Errorf("sealed claims %+v", signed)
	}
	if ch.Grant.Token != "jws" || ch.Grant.Digest != fencegate.Digest([]byte("jws")) || res.View.Lease != *ch.Grant {
		t.Errorf("sealed grant %+v, result %+v", ch.Grant, res.View.Lease)
	}
	boom := errors.New("boom")
	res, ch, _ = registry.DecideAcquire(snap, in)
	if err := registry.SealGrant(&res, &ch, "iss", func(*fencegate.Grant) ([]byte, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("seal failure: %v", err)
	}
}

func leaseSnap() registry.LeaseSnapshot {
	h := held()
	return registry.LeaseSnapshot{
		Meta:     registry.Meta{IssuerEpoch: 2, Revision: 41, PolicySeq: 3},
		Lease:    &h,
		Resource: &registry.ResourceRecord{Resource: "r", LastFence: 7, Holder: h.Lease},
		Policy:   fencegate.Policy{Pattern: "r", Generation: 3},
	}
}

// TestDecideRenewTable is the renew decision table.
func TestDecideRenewTable(t *testing.T) {
	in := func(owner string, ttl, at time.Duration) registry.RenewInput {
		return registry.RenewInput{Lease: "lease-7", Owner: owner, TTL: ttl, Now: t0.Add(at)}
	}
	for _, c := range []struct {
		name      string
		snap      func(*registry.LeaseSnapshot)
		in        registry.RenewInput
		err       error
		notHeld   string // the refused lease's state
		closes    bool   // a refusal that writes the end
		expiresAt int64  // a renewal's new expiry
	}{
		{"held, explicit TTL", nil, in("owner-a", 2*time.Second, 500*time.Millisecond), nil, "", false, t0.UnixMilli() + 2500},
		{"held, own TTL", nil, in("owner-a", 0, 500*time.Millisecond), nil, "", false, t0.UnixMilli() + 1500},
		{"expired: refused, end written", nil, in("owner-a", time.Second, time.Second), nil, fencegate.StateExpired, true, 0},
		{"revoked by epoch", func(s *registry.LeaseSnapshot) { s.Meta.IssuerEpoch = 3 }, in("owner-a", time.Second, 0), nil, fencegate.StateRevoked, true, 0},
		{"revoked by policy", func(s *registry.LeaseSnapshot) { s.Policy.Generation = 9 }, in("owner-a", time.Second, 0), nil, fencegate.StateRevoked, true, 0},
		{"released: refused, nothing written", func(s *registry.LeaseSnapshot) { s.Lease.State = fencegate.StateReleased }, in("owner-a", time.Second, 0), nil, fencegate.StateReleased, false, 0},
		{"expiry already written", func(s *registry.LeaseSnapshot) { s.Lease.State = fencegate.StateExpired }, in("owner-a", time.Second, 0), nil, fencegate.StateExpired, false, 0},
		{"other owner", nil, in("owner-b", time.Second, 0), registry.ErrNotOwner, "", false, 0},
		{"no lease", func(s *registry.LeaseSnapshot) { s.Lease = nil }, in("owner-a", time.Second, 0), registry.ErrNotFound, "", false, 0},
		{"policy TTL bound", func(s *registry.LeaseSnapshot) { s.Policy.MaxTTLMs = 500 }, in("owner-a", time.Second, 0), registry.ErrPolicyDenied, "", false, 0},
		{"sub-millisecond TTL", nil, in("owner-a", time.Microsecond, 0), registry.ErrInvalidInput, "", false, 0},
		{"negative TTL", nil, in("owner-a", -time.Second, 0), registry.ErrInvalidInput, "", false, 0},
		{"own TTL unusable", func(s *registry.LeaseSnapshot) { s.Lease.TTLMs = 0 }, in("owner-a", 0, 0), registry.ErrBackend, "", false, 0},
		{"lease read as another", func(s *registry.LeaseSnapshot) { s.Lease.Lease = "lease-8" }, in("owner-a", time.Second, 0), registry.ErrBackend, "", false, 0},
	} {
		snap := leaseSnap()
		if c.snap != nil {
			c.snap(&snap)
		}
		res, ch, err := registry.DecideRenew(snap, c.in)
		switch {
		case c.err != nil:
			if !errors.Is(err, c.err) || !ch.Empty() {
				t.Errorf("%s: err %v, change %+v; want %v and no change", c.name, err, ch, c.err)
			}
		case err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.notHeld != "":
			if !res.NotHeld || res.View.State != c.notHeld || ch.Empty() != !c.closes {
				t.Errorf("%s: notHeld %v state %s change %+v", c.name, res.NotHeld, res.View.State, ch)
			}
			if c.closes && (!onlyTimeRaised(snap.Meta, ch.Meta, c.in.Now) || len(ch.Leases) != 1 || ch.Leases[0].State != c.notHeld || ch.Resource == nil || ch.Resource.FreedAt != ch.Leases[0].EndedAt) {
				t.Errorf("%s: closing change %+v", c.name, ch)
			}
		default:
			l := res.View.Lease
			if res.NotHeld || res.View.State != fencegate.StateHeld || l.ExpiresAt != c.expiresAt || l.Fence != 7 || l.Token != "tok-7" ||
				ch.Meta == nil || ch.Meta.Revision != 42 || len(ch.Leases) != 1 || ch.Leases[0] != l || ch.Resource != nil || ch.Grant != nil {
				t.Errorf("%s: renewed %+v, change %+v", c.name, res, ch)
			}
		}
	}
}

// TestDecideRelease: a HELD lease is released (once) and frees its
// resource; a lease no longer held keeps its state; a repeat writes
// nothing and is not Released.
func TestDecideRelease(t *testing.T) {
	in := registry.ReleaseInput{Lease: "lease-7", Owner: "owner-a", Now: t0.Add(300 * time.Millisecond)}
	snap := leaseSnap()
	res, ch, err := registry.DecideRelease(snap, in)
	if err != nil || !res.Released || res.View.State != fencegate.StateReleased || ch.Meta == nil || ch.Meta.Revision != 42 ||
		len(ch.Leases) != 1 || ch.Leases[0].EndedAt != in.Now.UnixMilli() || ch.Resource == nil || ch.Resource.FreedAt != in.Now.UnixMilli() {
		t.Fatalf("release of a held lease: %+v, %+v, %v", res, ch, err)
	}
	again := snap
	l := ch.Leases[0]
	again.Lease, again.Resource = &l, ch.Resource
	res, ch, err = registry.DecideRelease(again, in)
	if err != nil || res.Released || res.View.State != fencegate.StateReleased || !ch.Empty() {
		t.Errorf("repeated release: %+v, %+v, %v", res, ch, err)
	}

	expired := leaseSnap()
	late := in
	late.Now = t0.Add(time.Hour)
	res, ch, err = registry.DecideRelease(expired, late)
	if err != nil || res.Released || res.View.State != fencegate.StateExpired || len(ch.Leases) != 1 || ch.Leases[0].EndedAt != held().ExpiresAt || !onlyTimeRaised(expired.Meta, ch.Meta, late.Now) {
		t.Errorf("release after expiry: %+v, %+v, %v", res, ch, err)
	}

	// A newer lease holds the resource: the old one's end does not free it.
	other := leaseSnap()
	other.Resource.Holder = "lease-8"
	if _, ch, _ := registry.DecideRelease(other, in); ch.Resource != nil {
		t.Errorf("release of a lease that is not the holder rewrote the record: %+v", ch.Resource)
	}
	if _, _, err := registry.DecideRelease(leaseSnap(), registry.ReleaseInput{Lease: "lease-7", Owner: "owner-b", Now: t0}); !errors.Is(err, registry.ErrNotOwner) {
		t.Errorf("release by another owner: %v", err)
	}
}

// TestDecideReads: status and resource reads state the effective state
// with the registry's current values, and an unwritten meta reads as
// epoch 1.
func TestDecideReads(t *testing.T) {
	snap := leaseSnap()
	snap.Meta = registry.Meta{}
	snap.Lease.IssuerEpoch = 1
	snap.Policy.Generation, snap.Lease.PolicyGeneration = 0, 0
	v, err := registry.DecideStatus(snap, registry.LeaseQuery{Now: t0})
	if err != nil || v.State != fencegate.StateHeld || v.Meta.IssuerEpoch != 1 {
		t.Errorf("status: %+v, %v", v, err)
	}
	if _, err := registry.DecideStatus(registry.LeaseSnapshot{}, registry.LeaseQuery{Now: t0}); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("status of nothing: %v", err)
	}
	h := held()
	rv, err := registry.DecideResource(registry.ResourceSnapshot{Meta: registry.Meta{IssuerEpoch: 2}, Resource: registry.ResourceRecord{Resource: "r", LastFence: 7, Holder: h.Lease},
		Holder: &h, Policy: fencegate.Policy{Generation: 3}}, "r", t0.Add(time.Second))
	if err != nil || rv.Holder == nil || rv.Holder.State != fencegate.StateExpired || rv.Record.LastFence != 7 || rv.PolicyGeneration != 3 {
		t.Errorf("resource: %+v, %v", rv, err)
	}
	rv, err = registry.DecideResource(registry.ResourceSnapshot{}, "fresh", t0)
	if err != nil || rv.Record.Resource != "fresh" || rv.Holder != nil || rv.Meta.IssuerEpoch != 1 {
		t.Errorf("fresh resource: %+v, %v", rv, err)
	}
}

// TestDecideAdmin: epoch bumps, floors, policy changes: what they write.
// A floor never lowers anything.
func TestDecideAdmin(t *testing.T) {
	m, ch, err := registry.DecideBumpEpoch(registry.Meta{})
	if err != nil || m.IssuerEpoch != 2 || m.Revision != 1 || ch.Meta == nil || *ch.Meta != m {
		t.Errorf("bump of a new registry: %+v, %+v, %v", m, ch, err)
	}
	if _, ch, err := registry.DecideBumpEpoch(registry.Meta{IssuerEpoch: math.MaxUint64}); err == nil || !ch.Empty() {
		t.Errorf("bump of the last epoch: %v", err)
	}

	base := registry.FenceFloorSnapshot{Meta: registry.Meta{IssuerEpoch: 1, Revision: 5, FenceFloor: 50}, Resource: registry.ResourceRecord{Resource: "r", LastFence: 9, FenceFloor: 20}}
	for _, c := range []struct {
		in                   registry.FenceFloorInput
		global, floor, fence uint64
	}{
		{registry.FenceFloorInput{Floor: 100}, 100, 0, 0},
		{registry.FenceFloorInput{Floor: 10}, 50, 0, 0},
		{registry.FenceFloorInput{Resource: "r", Floor: 30}, 50, 30, 9},
		{registry.FenceFloorInput{Resource: "r", Floor: 3}, 50, 20, 9},
	} {
		m, rec, ch, err := registry.DecideFenceFloor(base, c.in)
		if err != nil || m.FenceFloor != c.global || m.Revision != 6 || rec.FenceFloor != c.floor || rec.LastFence != c.fence || ch.Meta == nil ||
			(c.in.Resource == "") != (ch.Resource == nil) {
			t.Errorf("floor %+v: meta %+v record %+v change %+v %v", c.in, m, rec, ch, err)
		}
	}

	p, ch, err := registry.DecidePutPolicy(registry.Meta{IssuerEpoch: 1, PolicySeq: 4}, fencegate.Policy{Pattern: "a/*", Generation: 99, Deleted: true}, t0)
	if err != nil || p.Generation != 5 || p.Deleted || p.UpdatedAt != t0.UnixMilli() || ch.Meta.PolicySeq != 5 || !reflect.DeepEqual(*ch.Policy, p) {
		t.Errorf("put policy: %+v, %+v, %v", p, ch, err)
	}
	if _, ch, err := registry.DecidePutPolicy(registry.Meta{}, fencegate.Policy{Pattern: "bad pattern"}, t0); !errors.Is(err, registry.ErrInvalidInput) || !ch.Empty() {
		t.Errorf("put of a bad policy: %v", err)
	}
	d, ch, err := registry.DecideDeletePolicy(registry.PolicySnapshot{Meta: registry.Meta{PolicySeq: 5}, Existing: &p}, "a/*", t0)
	if err != nil || !d.Deleted || d.Generation != 6 || !ch.Policy.Deleted || ch.Meta.PolicySeq != 6 {
		t.Errorf("delete policy: %+v, %+v, %v", d, ch, err)
	}
	for name, snap := range map[string]registry.PolicySnapshot{"none": {}, "tombstone": {Existing: &d}} {
		if _, ch, err := registry.DecideDeletePolicy(snap, "a/*", t0); !errors.Is(err, registry.ErrNotFound) || !ch.Empty() {
			t.Errorf("delete of %s: %v", name, err)
		}
	}
}

// TestDecideCompact: only leases whose end is stored before the cut are
// deleted, at most Limit; a lease still stored HELD never is, even long
// expired.
func TestDecideCompact(t *testing.T) {
	cut := t0.Add(time.Hour)
	old := func(id, state string, end time.Time) registry.LeaseRecord {
		l := held()
		l.Lease, l.State, l.EndedAt = id, state, end.UnixMilli()
		return l
	}
	leases := []registry.LeaseRecord{
		old("a", fencegate.StateReleased, t0),
		held(),                                // HELD, expired long before the cut
		old("b", fencegate.StateExpired, cut), // ended at the cut: kept
		old("c", fencegate.StateRevoked, t0),
		old("d", fencegate.StateExpired, t0),
	}
	n, ch, err := registry.DecideCompact(registry.CompactSnapshot{Leases: leases}, registry.CompactInput{EndedBefore: cut, Limit: 2})
	if err != nil || n != 2 || len(ch.Delete) != 2 || ch.Delete[0].Lease != "a" || ch.Delete[1].Lease != "c" || ch.Meta != nil || ch.Resource != nil {
		t.Errorf("compact: %d, %+v, %v", n, ch.Delete, err)
	}
	if _, _, err := registry.DecideCompact(registry.CompactSnapshot{}, registry.CompactInput{EndedBefore: cut}); !errors.Is(err, registry.ErrInvalidInput) {
		t.Errorf("compact with no limit: %v", err)
	}
}

// onlyTimeRaised reports whether after, the meta a change writes, is
// before with only its time raised to at: an observed end counts in no
// revision, but it carries the registry's time (time.go).
func onlyTimeRaised(before registry.Meta, after *registry.Meta, at time.Time) bool {
	if after == nil {
		return false
	}
	want := before
	if want.IssuerEpoch == 0 {
		want.IssuerEpoch = 1
	}
	want.Time = max(before.Time, at.UnixMilli())
	return *after == want
}
