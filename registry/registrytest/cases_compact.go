package registrytest

import (
	"errors"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/registry"
)

// testCompact: leases that ended more than the retention ago are deleted
// with their request-ID and digest entries; held leases, recently ended
// leases and every fence sequence stay.
func testCompact(t *testing.T, e *env) {
	released := e.acquire(t, req("compact/a", "owner-a", "c-1", time.Second))
	e.release(t, released)
	expired := e.acquire(t, req("compact/b", "owner-a", "c-2", time.Second))
	e.clock.Advance(2 * time.Second)
	// Observe b's expiry (a new acquire closes it), and keep a held lease.
	next := e.acquire(t, req("compact/b", "owner-b", "c-3", MaxTTL))
	held := e.acquire(t, req("compact/c", "owner-a", "c-4", MaxTTL))

	if _, err := e.registry().Compact(e.ctx, 0); !errors.Is(err, registry.ErrInvalidInput) {
		t.Fatalf("retention 0: %v", err)
	}
	// Nothing ended an hour ago yet.
	if n, err := e.registry().Compact(e.ctx, time.Hour); err != nil || n != 0 {
		t.Fatalf("early compact: %d %v", n, err)
	}
	e.clock.Advance(2 * time.Hour)
	n, err := e.registry().Compact(e.ctx, time.Hour)
	if err != nil || n != 2 {
		t.Fatalf("compact: deleted %d (%v), want the released and the expired lease", n, err)
	}
	for _, gone := range []registry.Result{released, expired} {
		l := gone.View.Lease
		if _, err := e.backend().Lease(e.ctx, registry.LeaseQuery{Owner: l.Owner, RequestID: l.RequestID, Now: e.clock.Now()}); !errors.Is(err, registry.ErrNotFound) {
			t.Errorf("request %s still found: %v", l.RequestID, err)
		}
		if _, err := e.backend().Lease(e.ctx, registry.LeaseQuery{Digest: l.Digest, Now: e.clock.Now()}); !errors.Is(err, registry.ErrNotFound) {
			t.Errorf("digest of %s still found: %v", l.Lease, err)
		}
	}
	// Held leases (including one past its expiry that nobody closed) stay.
	for _, kept := range []registry.Result{next, held} {
		if v := e.status(t, kept); v.View.Lease.Lease != kept.View.Lease.Lease {
			t.Errorf("lease %s lost", kept.View.Lease.Lease)
		}
	}
	// Fence sequences never go back: the next grant continues above.
	if r := e.resource(t, "compact/a"); r.Record.LastFence != released.View.Lease.Fence || r.Holder != nil {
		t.Fatalf("compact/a after compaction: %+v", r)
	}
	again := e.acquire(t, req("compact/a", "owner-a", "c-1", time.Second))
	if again.Existing || again.View.Lease.Fence <= released.View.Lease.Fence || again.View.State != fencegate.StateHeld {
		t.Fatalf("after compaction the forgotten request ID got %+v (fence %d, was %d)", again.View.State, again.View.Lease.Fence, released.View.Lease.Fence)
	}
}
