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

	mu    sync.Mutex
	state State
	cause error
	// lease is the last registry answer (Grant kept from the acquire).
	lease   Lease
	grant   string
	claims  *fencegate.Grant
	changed chan struct{}
	done    chan struct{}
	// deadline is the local safety deadline; renewAt when to renew next.
	deadline time.Time
	renewAt  time.Time
	// doubtSince: HELD evidence counts only from requests sent at or after it.
	doubtSince time.Time
	// proof is the last HELD status proof, asked for at proofSent and
	// valid for proofLife from its iat.
	proof     string
	proofSent time.Time
	proofLife time.Duration
	lastSeq   uint64
	releasing bool

	events *dispatcher

	kick       chan struct{}
	stop       chan struct{}
	stopOnce   sync.Once
	keeperDone chan struct{}
	keeperCtx  context.Context
	keeperStop context.CancelFunc
}

func newHolder(c *Client, resource string, cfg holdConfig) *Holder {
	h := &Holder{
		c: c, cfg: cfg, clock: cfg.clock, resource: resource, requestID: cfg.requestID,
		changed: make(chan struct{}), done: make(chan struct{}),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), keeperDone: make(chan struct{}),
	}
	h.keeperCtx, h.keeperStop = context.WithCancel(context.Background())
	if len(cfg.onTransition) > 0 {
		h.events = newDispatcher(cfg.onTransition)
	}
	h.mu.Lock()
	h.transitionLocked(StateRequested, nil, nil)
	h.mu.Unlock()
	return h
}

// transitionLocked moves to state to. Final states are never left.
func (h *Holder) transitionLocked(to State, cause error, l *Lease) {
	if h.state == to || h.state.Final() {
		return
	}
	tr := Transition{From: h.state, To: to, At: h.clock.Now(), Cause: cause}
	if l != nil {
		cp := *l
		tr.Lease = &cp
	}
	h.state, h.cause = to, cause
	close(h.changed)
	h.changed = make(chan struct{})
	if to.Final() {
		close(h.done)
	}
	if h.events != nil {
		h.events.push(tr)
		if to.Final() {
			h.events.close()
		}
	}
}

// doubtLocked moves a usable lease to OWNERSHIP_UNKNOWN: new effects stop
// at once. Evidence of HELD then counts only from requests sent at or
// after since.
func (h *Holder) doubtLocked(since time.Time, cause error, l *Lease) {
	if h.state.Final() {
		return
	}
	if since.After(h.doubtSince) {
		h.doubtSince = since
	}
	h.transitionLocked(StateOwnershipUnknown, cause, l)
}

// brakeLocked applies the local safety deadline.
func (h *Holder) brakeLocked() {
	if h.state.Usable() && !h.clock.Now().Before(h.deadline) {
		h.doubtLocked(h.clock.Now(), ErrLocalDeadline, nil)
	}
}

// remaining is how long the registry says a HELD lease still runs,
// measured on the registry's clock only: expiry minus the proof's iat.
func remaining(l *Lease) (time.Duration, error) {
	st, err := statusClaims(l.Status)
	if err != nil {
		return 0, err
	}
	return l.ExpiresAt.Sub(time.UnixMilli(int64(st.IssuedAt))), nil
}

// Operations whose answers drive the state machine.
const (
	opAcquire = "acquire"
	opRenew   = "renew"
	opStatus  = "status"
	opRelease = "release"
)

// observe applies a registry answer to a request sent at sent (local clock).
func (h *Holder) observe(op string, sent time.Time, l *Lease, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.observeLocked(op, sent, l, err)
}

func (h *Holder) observeLocked(op string, sent time.Time, l *Lease, err error) {
	if h.state.Final() {
		return
	}
	if err != nil {
		var ce *Error
		if errors.As(err, &ce) {
			switch {
			case ce.Code() == fencegate.CodeLeaseNotHeld:
				st, _ := ce.Problem.Extra["state"].(string)
				h.endLocked(st, err, nil)
				return
			case ce.Code() == fencegate.CodeNotFound && op != opAcquire:
				// The registry does not know the lease (restored from an
				// old snapshot?): it is certainly not held.
				h.endLocked(fencegate.StateExpired, err, nil)
				return
			}
		}
		h.doubtLocked(sent, fmt.Errorf("client: %s: outcome uncertain: %w", op, err), nil)
		return
	}
	if l.Lease != h.lease.Lease && h.lease.Lease != "" {
		h.doubtLocked(sent, fmt.Errorf("client: %s answered for lease %s, not %s", op, l.Lease, h.lease.Lease), l)
		return
	}
	if l.State != fencegate.StateHeld {
		h.endLocked(l.State, nil, l)
		return
	}
	if op == opRelease {
		// A release answered HELD: impossible; trust nothing.
		h.doubtLocked(sent, fmt.Errorf("client: release answered %s", l.State), l)
		return
	}
	life, rerr := remaining(l)
	if rerr != nil {
		h.doubtLocked(sent, rerr, l)
		return
	}
	grant := h.grant
	if l.Grant != "" {
		grant = l.Grant
	}
	h.lease = *l
	h.lease.Grant = grant
	if sent.Before(h.doubtSince) {
		return // older than the doubt: not evidence enough
	}
	if dl := sent.Add(life - h.cfg.safetyMargin); dl.After(h.deadline) {
		h.deadline = dl
		h.renewAt = sent.Add(h.jittered(time.Duration(float64(life) * h.cfg.renewFraction)))
	}
	if l.Status != "" && (h.proof == "" || !sent.Before(h.proofSent)) {
		if st, err := statusClaims(l.Status); err == nil {
			h.proof, h.proofSent = l.Status, sent
			h.proofLife = time.UnixMilli(int64(st.ExpiresAt)).Sub(time.UnixMilli(int64(st.IssuedAt)))
		}
	}
	if !h.clock.Now().Before(h.deadline) {
		h.doubtLocked(h.clock.Now(), ErrLocalDeadline, l)
		return
	}
	if h.state == StateRenewing && op != opRenew {
		return // the renewal in flight will settle RENEWING
	}
	h.transitionLocked(StateHeld, nil, l)
}

// endLocked applies a registry state that is not HELD.
func (h *Holder) endLocked(registryState string, cause error, l *Lease) {
	switch registryState {
	case fencegate.StateReleased:
		h.transitionLocked(StateReleased, cause, l)
	default: // EXPIRED, REVOKED (or unknown to this SDK): not held
		if cause == nil && registryState != fencegate.StateExpired {
			cause = fmt.Errorf("client: the registry reports the lease %s", registryState)
		}
		h.transitionLocked(StateExpired, cause, l)
	}
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
	return h.state
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
	return h.state, h.changed
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
	return h.cause
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
	case h.releasing && !h.state.Final():
		return &StateError{State: h.state, Cause: errors.New("client: the lease is being released")}
	case !h.state.Usable():
		// The keeper is already asking the registry (on its retry
		// schedule; a refused effect does not hurry it).
		return &StateError{State: h.state, Cause: h.cause}
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
	return h.lease
}

// Resource is the canonical resource ID.
func (h *Holder) Resource() string { return h.resource }

// RequestID is the acquire's request ID.
func (h *Holder) RequestID() string { return h.requestID }

// LeaseID is the lease ID.
func (h *Holder) LeaseID() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lease.Lease
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
	return h.lease.GrantDigest
}

// Deadline is the local safety deadline: past it, without a newer
// confirmation, the Holder produces no effect.
func (h *Holder) Deadline() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.deadline
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
		return h.state, fmt.Errorf("client: status: %w", err)
	}
	return h.state, nil
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
	final := h.state.Final()
	id := h.lease.Lease
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
		st, renewAt, deadline := h.state, h.renewAt, h.deadline
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
		if st.Usable() && (wake.IsZero() || deadline.Before(wake)) {
			wake = deadline
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
	if h.state == StateHeld {
		h.transitionLocked(StateRenewing, nil, nil)
	}
	id := h.lease.Lease
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

func newDispatcher(fns []func(Transition)) *dispatcher {
	d := &dispatcher{fns: fns, wake: make(chan struct{}, 1)}
	go d.run()
	return d
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
