package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock"
)

// Holder holds one lease for a worker: the local lease state machine (docs/design.md)
// (see State), driven by what the registry answers. It renews the lease
// automatically at a fraction of the TTL (with jitter), and it is the
// gate every effect of the worker goes through: Transport, RunSegments
// and Usable refuse, without any network I/O, as soon as the Holder no
// longer knows that it holds the lease, whether the registry said so, an
// answer was lost, or the local safety deadline passed.
//
// The local clock is a safety brake, never a source of HELD: the local
// deadline is the time the last confirmation was asked for (before the
// request was sent) plus the TTL the registry confirmed, minus a safety
// margin. Past it, without a newer confirmation, the state is
// OWNERSHIP_UNKNOWN until the registry answers.
//
// Every change of its state goes through decideLease (lease_decide.go),
// a pure transition the Holder applies under its lock (applyLocked).
//
// A Holder is safe for concurrent use. Call Release when done; it stops
// the renewals.
type Holder struct {
	c         *Client
	cfg       holdConfig
	clock     clock.Clock
	resource  string
	requestID string

	// prefetching: a background request for the next proof is out
	// (prefetchProof).
	prefetching atomic.Bool

	mu sync.Mutex
	// ls is the state machine's state: only applyLocked changes it,
	// through decideLease (lease_decide.go).
	ls leaseState
	// grant and claims are the acquire's, set once by Hold.
	grant   string
	claims  *fencegate.Grant
	changed chan struct{}
	done    chan struct{}
	// renewAt is when the keeper renews next (decideLease's renewPlan,
	// jittered).
	renewAt   time.Time
	lastSeq   uint64
	releasing bool

	events *dispatcher

	kick       chan struct{}
	stop       chan struct{}
	stopOnce   sync.Once
	keeperDone chan struct{}
	keeperCtx  context.Context
	keeperStop context.CancelFunc

	// life is Context's: cancelled (cause: a *StateError) once ownership
	// is lost; live once Hold hands the Holder out (context.go).
	life      context.Context
	lifeEnd   context.CancelCauseFunc
	handedOut bool
}

func newHolder(c *Client, resource string, cfg holdConfig) *Holder {
	h := &Holder{
		c: c, cfg: cfg, clock: cfg.clock, resource: resource, requestID: cfg.requestID,
		changed: make(chan struct{}), done: make(chan struct{}),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), keeperDone: make(chan struct{}),
	}
	h.keeperCtx, h.keeperStop = context.WithCancel(context.Background())
	h.life, h.lifeEnd = context.WithCancelCause(context.Background())
	if len(cfg.onTransition) > 0 {
		h.events = newDispatcher(cfg.onTransition)
	}
	h.mu.Lock()
	h.applyLocked(leaseEvent{kind: leaseRequested})
	h.mu.Unlock()
	return h
}

// applyLocked runs the state machine on ev at the Holder's time now: it
// stores the state decideLease returns and carries out its actions (the
// renewal's schedule, jittered; the transition's announcement).
func (h *Holder) applyLocked(ev leaseEvent) {
	ev.now = h.clock.Now()
	next, act := decideLease(h.ls, ev, leaseParams{safetyMargin: h.cfg.safetyMargin, renewFraction: h.cfg.renewFraction})
	h.ls = next
	if r := act.renew; r != nil {
		h.renewAt = r.from.Add(h.jittered(r.after))
	}
	h.endLifeLocked(ev.now, act.transition)
	if tr := act.transition; tr != nil {
		close(h.changed)
		h.changed = make(chan struct{})
		if tr.To.Final() {
			close(h.done)
		}
		if h.events != nil {
			h.events.push(*tr)
			if tr.To.Final() {
				h.events.close()
			}
		}
	}
}

// brakeLocked applies the local safety deadline.
func (h *Holder) brakeLocked() { h.applyLocked(leaseEvent{kind: leaseLooked}) }

// observe applies a registry answer to a request sent at sent (local clock).
func (h *Holder) observe(op string, sent time.Time, l *Lease, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.observeLocked(op, sent, l, err)
}

func (h *Holder) observeLocked(op string, sent time.Time, l *Lease, err error) {
	h.applyLocked(leaseEvent{kind: leaseAnswered, op: op, sent: sent, answer: l, err: err, grant: h.grant})
}

func (h *Holder) jittered(d time.Duration) time.Duration {
	if h.cfg.jitter == 0 {
		return d
	}
	f := 1 + h.cfg.jitter*(2*h.cfg.random()-1)
	return time.Duration(float64(d) * f)
}

// State is the current state (the local deadline applied).
func (h *Holder) State() State {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.brakeLocked()
	return h.ls.state
}

// Watch returns the current state and a channel that is closed at the
// next state change: the race-free way to follow the state machine.
//
//	for {
//		st, changed := h.Watch()
//		...
//		<-changed
//	}
//
// The local deadline moves the state only when something looks (State,
// Usable, Watch, an effect) or when the Holder's keeper notices it, which
// it does at the deadline.
func (h *Holder) Watch() (State, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.brakeLocked()
	return h.ls.state, h.changed
}

// Done is closed when the state becomes final (EXPIRED or RELEASED).
func (h *Holder) Done() <-chan struct{} { return h.done }

// Err is the cause of the current state: nil while HELD or RENEWING, else
// what moved the Holder out of it (ErrLocalDeadline, a transport error, a
// registry problem ...), possibly nil for a plain release or expiry.
func (h *Holder) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.brakeLocked()
	return h.ls.cause
}

// Usable returns nil when the Holder knows that it holds its lease: state
// HELD or RENEWING and the local deadline not passed. Otherwise it returns
// a *StateError (errors.Is(err, ErrNotHolding)); meanwhile the Holder
// keeps asking the registry in the background. Check it before every
// effect that does not go through Transport.
func (h *Holder) Usable() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.usableLocked()
}

func (h *Holder) usableLocked() error {
	h.brakeLocked()
	switch {
	case h.releasing && !h.ls.state.Final():
		return &StateError{State: h.ls.state, Cause: errors.New("client: the lease is being released")}
	case !h.ls.state.Usable():
		// The keeper is already asking the registry (on its retry
		// schedule; a refused effect does not hurry it).
		return &StateError{State: h.ls.state, Cause: h.ls.cause}
	}
	return nil
}

func (h *Holder) kickKeeper() {
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// Lease is the registry's last answer about the lease (with the grant).
func (h *Holder) Lease() Lease {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ls.lease
}

// Resource is the canonical resource ID.
func (h *Holder) Resource() string { return h.resource }

// RequestID is the acquire's request ID.
func (h *Holder) RequestID() string { return h.requestID }

// LeaseID is the lease ID.
func (h *Holder) LeaseID() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ls.lease.Lease
}

// Fence is the grant's fence token.
func (h *Holder) Fence() uint64 { return h.claims.FenceToken }

// OperationRoot is the grant's operation root: every segment of the
// grant's writes shares it.
func (h *Holder) OperationRoot() string { return h.claims.OperationRoot }

// Grant is the lockGrant.v1 JWS (the Fence-Grant header value).
func (h *Holder) Grant() string { return h.grant }

// GrantDigest is the grant's digest ("sha256:...").
func (h *Holder) GrantDigest() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ls.lease.GrantDigest
}

// Deadline is the local safety deadline: past it, without a newer
// confirmation, the Holder produces no effect.
func (h *Holder) Deadline() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ls.deadline
}

// LastSegment is the highest segment number that came back with a
// receipt through this Holder's transports (0: none yet). RunSegments
// continues after it by default.
func (h *Holder) LastSegment() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lastSeq
}

func (h *Holder) noteSegment(seq uint64) {
	h.mu.Lock()
	h.lastSeq = max(h.lastSeq, seq)
	h.mu.Unlock()
}

// Check asks the registry for the lease's status now (a linearizable
// read) and applies the answer: HELD (extending the local deadline by
// what the registry confirms), EXPIRED, RELEASED, or, when the answer is
// uncertain, OWNERSHIP_UNKNOWN. It returns the resulting state.
func (h *Holder) Check(ctx context.Context) (State, error) {
	sent := h.clock.Now()
	l, err := h.c.Status(ctx, h.LeaseID())
	h.mu.Lock()
	defer h.mu.Unlock()
	h.observeLocked(opStatus, sent, l, err)
	h.brakeLocked()
	if err != nil {
		return h.ls.state, fmt.Errorf("client: status: %w", err)
	}
	return h.ls.state, nil
}

// Release stops the renewals and releases the lease. New effects stop at
// once, before the registry answers. It returns nil when the registry
// confirms the lease is over (RELEASED, or already EXPIRED); on an
// uncertain answer the state becomes OWNERSHIP_UNKNOWN and the error is
// returned (Release may be called again; the lease expires by its TTL
// anyway). ctx bounds the call.
func (h *Holder) Release(ctx context.Context) error {
	h.mu.Lock()
	h.releasing = true
	h.mu.Unlock()
	h.stopKeeper()
	h.mu.Lock()
	final := h.ls.state.Final()
	id := h.ls.lease.Lease
	h.mu.Unlock()
	if final {
		return nil
	}
	sent := h.clock.Now()
	l, err := h.c.Release(ctx, id)
	h.observe(opRelease, sent, l, err)
	if err != nil {
		return fmt.Errorf("client: release: %w", err)
	}
	if st := h.State(); !st.Final() {
		return fmt.Errorf("client: release answered state %s", l.State)
	}
	return nil
}

func (h *Holder) stopKeeper() {
	h.stopOnce.Do(func() {
		close(h.stop)
		h.keeperStop()
	})
	<-h.keeperDone
}

// keep renews the lease, applies the local deadline and, while ownership
// is unknown, asks the registry again until it answers. One registry call
// at a time.
func (h *Holder) keep() {
	defer close(h.keeperDone)
	var inflight chan struct{}
	var retryAt time.Time
	kicked := false
	prev := StateHeld
	for {
		h.mu.Lock()
		h.brakeLocked()
		st, renewAt, deadline := h.ls.state, h.renewAt, h.ls.deadline
		h.mu.Unlock()
		now := h.clock.Now()
		if st.Final() {
			if inflight != nil {
				<-inflight
			}
			return
		}
		if prev.Usable() && !st.Usable() {
			retryAt = time.Time{} // just lost: ask at once
		}
		prev = st
		attemptAt := renewAt
		if !st.Usable() {
			attemptAt = retryAt
		}
		if inflight == nil && (kicked || !attemptAt.After(now)) {
			kicked = false
			inflight = h.attempt()
			continue
		}
		var wake time.Time
		if inflight == nil {
			wake = attemptAt
		}
		if deadline.After(now) && (wake.IsZero() || deadline.Before(wake)) {
			wake = deadline // the brake, and the Context's end (context.go)
		}
		var timer <-chan time.Time
		stopTimer := func() bool { return false }
		if !wake.IsZero() {
			t := h.clock.NewTimer(wake.Sub(now))
			timer, stopTimer = t.C(), t.Stop
		}
		select {
		case <-timer:
		case <-h.kick:
			kicked = true
		case <-inflight:
			// After an uncertain answer, ask again only after the retry
			// interval (not "at once" as after other losses).
			inflight, prev = nil, StateOwnershipUnknown
			retryAt = h.clock.Now().Add(h.jittered(h.cfg.retryInterval))
		case <-h.stop:
			stopTimer()
			if inflight != nil {
				<-inflight
			}
			return
		}
		stopTimer()
	}
}

// attempt renews once in the background; the channel closes when the
// answer has been applied.
func (h *Holder) attempt() chan struct{} {
	done := make(chan struct{})
	h.mu.Lock()
	h.applyLocked(leaseEvent{kind: leaseRenewSent})
	id := h.ls.lease.Lease
	h.mu.Unlock()
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(h.keeperCtx, h.cfg.attemptTimeout)
		defer cancel()
		sent := h.clock.Now()
		l, err := h.c.Renew(ctx, id, h.cfg.ttl)
		if h.keeperCtx.Err() != nil {
			return // stopped by Release, which settles the state
		}
		h.observe(opRenew, sent, l, err)
	}()
	return done
}

// dispatcher delivers transitions to callbacks in order, off the Holder's lock.
type dispatcher struct {
	fns    []func(Transition)
	mu     sync.Mutex
	queue  []Transition
	closed bool
	wake   chan struct{}
}

// newDispatcher returns a dispatcher whose queue holds the transitions
// until its goroutine runs (run, started by Hold).
func newDispatcher(fns []func(Transition)) *dispatcher {
	return &dispatcher{fns: fns, wake: make(chan struct{}, 1)}
}

func (d *dispatcher) push(tr Transition) {
	d.mu.Lock()
	if !d.closed {
		d.queue = append(d.queue, tr)
	}
	d.mu.Unlock()
	d.signal()
}

func (d *dispatcher) close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.signal()
}

func (d *dispatcher) signal() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// run delivers the queued transitions until the dispatcher is closed and
// its queue is empty.
func (d *dispatcher) run() {
	for {
		d.mu.Lock()
		q, closed := d.queue, d.closed
		d.queue = nil
		d.mu.Unlock()
		if len(q) == 0 {
			if closed {
				return
			}
			<-d.wake
			continue
		}
		for _, tr := range q {
			for _, f := range d.fns {
				f(tr)
			}
		}
	}
}
