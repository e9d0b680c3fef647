package registry_test

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/registry"
)

// leaseOf is a HELD lease of resource at fence, granted at t0 for a second
// under policy generation 0, epoch 1.
func leaseOf(resource string, fence uint64) registry.LeaseRecord {
	return registry.LeaseRecord{Lease: "lease-" + resource + "-" + itoa(fence), Resource: resource, Owner: "o", RequestID: "q", OpClass: "write",
		Fence: fence, IssuerEpoch: 1, TTLMs: 1000, IssuedAt: t0.UnixMilli(), ExpiresAt: t0.UnixMilli() + 1000, State: fencegate.StateHeld}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

func names(p registry.LeasePage) []string {
	var out []string
	for _, v := range p.Leases {
		out = append(out, v.Lease.Resource+"@"+itoa(v.Lease.Fence)+"="+v.State)
	}
	return out
}

// listing is three resources' leases, stored out of order: a/1 released,
// a/2 held, ab/1 held, b/1 held but past its expiry at t0+2s.
func listing() registry.LeasesSnapshot {
	a1 := leaseOf("a", 1)
	a1.State, a1.EndedAt = fencegate.StateReleased, t0.UnixMilli()
	b1 := leaseOf("b", 1)
	b1.ExpiresAt = t0.UnixMilli() + 500
	return registry.LeasesSnapshot{
		Meta:   registry.Meta{IssuerEpoch: 1},
		Leases: []registry.LeaseRecord{b1, leaseOf("ab", 1), leaseOf("a", 2), a1},
	}
}

// TestDecideLeasesOrderAndPages: leases come in (resource, fence) order
// with their effective state; pages of two follow each other by Next
// without a gap or a repeat, and the last page has no Next.
func TestDecideLeasesOrderAndPages(t *testing.T) {
	now := t0.Add(700 * time.Millisecond)
	all, err := registry.DecideLeases(listing(), registry.LeasesQuery{Limit: 10, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a@1=RELEASED", "a@2=HELD", "ab@1=HELD", "b@1=EXPIRED"}
	if got := names(all); !slices.Equal(got, want) || !all.Next.IsZero() {
		t.Fatalf("listing %v next %v, want %v and no next", got, all.Next, want)
	}
	var paged []string
	q := registry.LeasesQuery{Limit: 2, Now: now}
	for range 4 {
		p, err := registry.DecideLeases(listing(), q)
		if err != nil {
			t.Fatal(err)
		}
		paged = append(paged, names(p)...)
		if p.Next.IsZero() {
			break
		}
		q.After = p.Next
	}
	if !slices.Equal(paged, want) {
		t.Errorf("pages of 2 gave %v, want %v", paged, want)
	}
}

// TestDecideLeasesFilters: by resource, by prefix and by effective state.
func TestDecideLeasesFilters(t *testing.T) {
	now := t0.Add(700 * time.Millisecond)
	for _, c := range []struct {
		name string
		q    registry.LeasesQuery
		want []string
	}{
		{"resource", registry.LeasesQuery{Resource: "a"}, []string{"a@1=RELEASED", "a@2=HELD"}},
		{"prefix", registry.LeasesQuery{Prefix: "a"}, []string{"a@1=RELEASED", "a@2=HELD", "ab@1=HELD"}},
		{"held", registry.LeasesQuery{State: fencegate.StateHeld}, []string{"a@2=HELD", "ab@1=HELD"}},
		{"expired by the clock", registry.LeasesQuery{State: fencegate.StateExpired}, []string{"b@1=EXPIRED"}},
		{"after a cursor", registry.LeasesQuery{After: registry.LeaseCursor{Resource: "a", Fence: 2}}, []string{"ab@1=HELD", "b@1=EXPIRED"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.q.Limit, c.q.Now = 10, now
			p, err := registry.DecideLeases(listing(), c.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(p); !slices.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

// TestDecideLeasesPolicyRevokes: a lease of an older policy generation
// lists as REVOKED, as its status reads.
func TestDecideLeasesPolicyRevokes(t *testing.T) {
	snap := listing()
	snap.Policies = []fencegate.Policy{{Pattern: "ab", Generation: 4}}
	p, err := registry.DecideLeases(snap, registry.LeasesQuery{Resource: "ab", Limit: 10, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(p); !slices.Equal(got, []string{"ab@1=REVOKED"}) {
		t.Errorf("got %v, want ab@1=REVOKED", got)
	}
}

// TestLeasesQueryValidate: bad queries are ErrInvalidInput.
func TestLeasesQueryValidate(t *testing.T) {
	for _, q := range []registry.LeasesQuery{
		{Limit: 0},
		{Limit: registry.MaxLeasesLimit + 1},
		{Limit: 1, Resource: "a", Prefix: "a"},
		{Limit: 1, Resource: "bad resource"},
		{Limit: 1, State: "held"},
		{Limit: 1, Prefix: strings.Repeat("a", fencegate.MaxResourceLen+1)},
	} {
		if _, err := registry.DecideLeases(listing(), q); !errors.Is(err, registry.ErrInvalidInput) {
			t.Errorf("query %+v: error %v, want ErrInvalidInput", q, err)
		}
	}
}

// TestLeaseCursorRoundTrip: String and ParseLeaseCursor are inverse, and
// non-canonical spellings are refused.
func TestLeaseCursorRoundTrip(t *testing.T) {
	c := registry.LeaseCursor{Resource: "invoice/2026-07-19", Fence: 42}
	got, err := registry.ParseLeaseCursor(c.String())
	if err != nil || got != c {
		t.Fatalf("parse(%q) = %+v, %v", c.String(), got, err)
	}
	for _, bad := range []string{"x", "YQ", "YQ.", "YQ.0", "YQ.01", "YQ.-1", "YQ==.1", "YR.1", "YQ.18446744073709551616", "IA.1", "YQ.1.2"} {
		if _, err := registry.ParseLeaseCursor(bad); !errors.Is(err, registry.ErrInvalidInput) {
			t.Errorf("ParseLeaseCursor(%q) = %v, want ErrInvalidInput", bad, err)
		}
	}
}
