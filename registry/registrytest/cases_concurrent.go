package registrytest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/registry"
)

// Size of the concurrent subtests.
const (
	concurrentWorkers = 8
	concurrentRounds  = 20
)

// testConcurrentAcquirers races workers acquiring and releasing one
// resource (half waiting, half retrying non-waiting acquires) with a
// frozen clock, so a lease ends only by release. Each holder claims an
// atomic slot after Acquire returns and frees it before Release: any
// overlap of two holders fails. Fences must increase in grant order.
func testConcurrentAcquirers(t *testing.T, e *env) {
	const res = "race/frozen"
	ctx, cancel := context.WithTimeout(e.ctx, e.raceLimit())
	defer cancel()
	reg := e.registry()

	var (
		slot   atomic.Int64
		mu     sync.Mutex
		order  []uint64
		result []registry.Result
		wg     sync.WaitGroup
	)
	for w := range concurrentWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := int64(w + 1)
			owner := fmt.Sprintf("worker-%d", w)
			for r := range concurrentRounds {
				rq := req(res, owner, fmt.Sprintf("w%d-r%d", w, r), time.Minute)
				if w%2 == 0 {
					rq.Wait = 30 * time.Second // never runs out: the clock is frozen
				}
				var got registry.Result
				for {
					var err error
					got, err = reg.Acquire(ctx, rq)
					if err == nil {
						break
					}
					if rq.Wait == 0 && errors.Is(err, registry.ErrLeaseHeld) {
						pause(50 * time.Microsecond)
						continue
					}
					t.Errorf("%s round %d: acquire: %v", owner, r, err)
					return
				}
				if prev := slot.Swap(id); prev != 0 {
					t.Errorf("%s got fence %d while worker-%d holds the lease", owner, got.View.Lease.Fence, prev-1)
				}
				mu.Lock()
				order = append(order, got.View.Lease.Fence)
				result = append(result, got)
				mu.Unlock()
				if r%3 == 0 {
					if _, err := reg.Renew(ctx, owner, got.View.Lease.Lease, time.Minute); err != nil {
						t.Errorf("%s: renew while holding: %v", owner, err)
					}
				}
				if st, err := reg.Status(ctx, registry.LeaseQuery{Lease: got.View.Lease.Lease}); err != nil || st.View.State != fencegate.StateHeld {
					t.Errorf("%s: status while holding: %v %s", owner, err, st.View.State)
				}
				if !slot.CompareAndSwap(id, 0) {
					t.Errorf("%s: another holder took the slot while %s held it", owner, owner)
				}
				if _, err := reg.Release(ctx, owner, got.View.Lease.Lease); err != nil {
					t.Errorf("%s: release: %v", owner, err)
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if len(order) != concurrentWorkers*concurrentRounds {
		t.Fatalf("%d grants, want %d", len(order), concurrentWorkers*concurrentRounds)
	}
	for i := 1; i < len(order); i++ {
		if order[i] <= order[i-1] {
			t.Fatalf("grant %d has fence %d after fence %d", i, order[i], order[i-1])
		}
	}
	for _, r := range result {
		e.checkResult(t, r)
	}
	if got := e.resource(t, res).Record.LastFence; got != order[len(order)-1] {
		t.Errorf("LastFence %d, last granted %d", got, order[len(order)-1])
	}
}

// testConcurrentExpiry races workers on one resource while the clock moves
// on its own, so leases also end by expiry, by renewals that come too late
// and by abandonment. Every Acquire, Renew and Release reaches the backend
// through historyBackend, which records them in the order the backend
// applied them. The history is then replayed against a model of one
// resource: a grant is allowed only when the previous lease was released,
// had its expiry written by an earlier operation, or is expired at the
// grant's own time; a renewal only while the lease is held; and fences
// increase in grant order. So at most one lease is HELD at
// any point of the backend's order.
//
// The check uses each operation's own time, the time it decided at
// (AcquireResult.At, LeaseView.At), not one timeline: the registry reads
// its clock before the backend applies the operation, and raises it to
// the registry's time by at most its skew budget (registry.DecisionTime),
// so when the clock moves concurrently by more than that an operation
// applied later may carry an earlier time (a grant stamped 200 applied
// after a release stamped 260). That is safe (the later grant just
// expires sooner) and is not treated as overlap.
func testConcurrentExpiry(t *testing.T, e *env) {
	const res = "race/moving"
	const ttl = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(e.ctx, e.raceLimit())
	defer cancel()
	hb := &historyBackend{Backend: e.backend()}
	reg := e.newRegistry(t, hb)

	stop := make(chan struct{})
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		for {
			select {
			case <-stop:
				return
			default:
			}
			e.clock.Advance(20 * time.Millisecond)
			pause(200 * time.Microsecond)
		}
	}()

	var wg sync.WaitGroup
	var grants atomic.Int64
	const workers, rounds = concurrentWorkers - 2, concurrentRounds - 5
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("worker-%d", w)
			for r := range rounds {
				rq := req(res, owner, fmt.Sprintf("w%d-r%d", w, r), ttl)
				if w%2 == 0 {
					rq.Wait = time.Second
				}
				var got registry.Result
				for {
					var err error
					got, err = reg.Acquire(ctx, rq)
					if err == nil {
						break
					}
					if errors.Is(err, registry.ErrLeaseHeld) {
						pause(50 * time.Microsecond)
						continue
					}
					t.Errorf("%s round %d: acquire: %v", owner, r, err)
					return
				}
				grants.Add(1)
				e.checkResult(t, got)
				lease := got.View.Lease.Lease
				switch r % 3 {
				case 0: // release
				case 1: // renew, then release
					if _, err := reg.Renew(ctx, owner, lease, ttl); err != nil && !errors.Is(err, registry.ErrNotHeld) {
						t.Errorf("%s: renew: %v", owner, err)
					}
				case 2: // abandon: the lease expires
					continue
				}
				if _, err := reg.Release(ctx, owner, lease); err != nil {
					t.Errorf("%s: release: %v", owner, err)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-ticked
	if t.Failed() {
		return
	}
	if grants.Load() != workers*rounds {
		t.Fatalf("%d grants, want %d", grants.Load(), workers*rounds)
	}
	checkHistory(t, hb.history())
}

// event is one backend operation as historyBackend saw it.
type event struct {
	op    string // "acquire", "renew", "release"
	lease string
	now   int64
	acq   registry.AcquireResult
	view  registry.LeaseView
	err   error
	// notHeld: a renewal refused (RenewResult.NotHeld); released: a
	// release that ended the lease (ReleaseResult.Released).
	notHeld, released bool
}

// historyBackend serializes Acquire, Renew and Release on a backend and
// records them in the order they were applied.
type historyBackend struct {
	registry.Backend
	mu     sync.Mutex
	events []event
}

func (h *historyBackend) Acquire(ctx context.Context, in registry.AcquireInput, seal registry.SealFunc) (registry.AcquireResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	res, err := h.Backend.Acquire(ctx, in, seal)
	h.events = append(h.events, event{op: "acquire", lease: in.LeaseID, now: decidedAt(in.Now, res.At), acq: res, err: err})
	return res, err
}

func (h *historyBackend) Renew(ctx context.Context, in registry.RenewInput) (registry.RenewResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	res, err := h.Backend.Renew(ctx, in)
	h.events = append(h.events, event{op: "renew", lease: in.Lease, now: decidedAt(in.Now, res.View.At), view: res.View, notHeld: res.NotHeld, err: err})
	return res, err
}

func (h *historyBackend) Release(ctx context.Context, in registry.ReleaseInput) (registry.ReleaseResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	res, err := h.Backend.Release(ctx, in)
	h.events = append(h.events, event{op: "release", lease: in.Lease, now: decidedAt(in.Now, res.View.At), view: res.View, released: res.Released, err: err})
	return res, err
}

// decidedAt is the time an operation decided at, Unix ms: at, or its
// clock's now when the backend failed before saying.
func decidedAt(now, at time.Time) int64 {
	if at.IsZero() {
		return ms(now)
	}
	return ms(at)
}

func (h *historyBackend) history() []event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.events)
}

// checkHistory replays a one-resource history against the model described
// at testConcurrentExpiry.
func checkHistory(t *testing.T, evs []event) {
	t.Helper()
	var (
		cur       string // current lease
		expiresAt int64
		ended     bool // released, or its expiry written by an operation
		lastFence uint64
		granted   int
	)
	heldAt := func(now int64) bool { return cur != "" && !ended && now < expiresAt }
	for i, ev := range evs {
		switch ev.op {
		case "acquire":
			switch {
			case ev.err != nil:
				t.Errorf("event %d: acquire failed: %v", i, ev.err)
			case ev.acq.Granted:
				l := ev.acq.View.Lease
				if heldAt(ev.now) {
					t.Errorf("event %d: lease %s (fence %d) granted at %d while lease %s is held until %d",
						i, l.Lease, l.Fence, ev.now, cur, expiresAt)
				}
				if l.Fence <= lastFence {
					t.Errorf("event %d: fence %d granted after fence %d", i, l.Fence, lastFence)
				}
				cur, expiresAt, ended, lastFence = l.Lease, l.ExpiresAt, false, l.Fence
				granted++
			case ev.acq.Busy:
				if ev.acq.Holder.Lease != cur || !heldAt(ev.now) {
					t.Errorf("event %d: busy at %d, holder %s; the model's lease %s (ended %v, expires %d) is not held",
						i, ev.now, ev.acq.Holder.Lease, cur, ended, expiresAt)
				}
			}
		case "renew":
			switch {
			case ev.err == nil && !ev.notHeld:
				if ev.lease != cur || !heldAt(ev.now) {
					t.Errorf("event %d: lease %s renewed at %d; the model's lease %s (ended %v, expires %d)",
						i, ev.lease, ev.now, cur, ended, expiresAt)
				}
				expiresAt = ev.view.Lease.ExpiresAt
			case ev.err == nil:
				if ev.lease == cur && heldAt(ev.now) {
					t.Errorf("event %d: renewal of held lease %s refused at %d (%s)", i, ev.lease, ev.now, ev.view.State)
				}
				if ev.lease == cur {
					ended = true // the refusal wrote the expiry
				}
			default:
				t.Errorf("event %d: renew failed: %v", i, ev.err)
			}
		case "release":
			if want := ev.err == nil && ev.lease == cur && !ended && heldAt(ev.now); ev.released != want {
				t.Errorf("event %d: release of lease %s at %d says released=%v; the model's lease %s (ended %v, expires %d)",
					i, ev.lease, ev.now, ev.released, cur, ended, expiresAt)
			}
			switch {
			case ev.err != nil:
				t.Errorf("event %d: release failed: %v", i, ev.err)
			case ev.view.State == fencegate.StateReleased && ev.lease == cur && !ended:
				if !heldAt(ev.now) {
					t.Errorf("event %d: lease %s released at %d after it expired at %d", i, ev.lease, ev.now, expiresAt)
				}
				ended = true
			case ev.view.State == fencegate.StateReleased:
				// A repeated release; nothing changes.
			case ev.lease == cur && heldAt(ev.now):
				t.Errorf("event %d: release of held lease %s answered %s", i, ev.lease, ev.view.State)
			case ev.lease == cur:
				ended = true // the release wrote the expiry
			}
		}
	}
	if granted == 0 {
		t.Errorf("history has no grant")
	}
}
