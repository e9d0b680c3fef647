package client

import (
	"errors"
	"fmt"
	"time"

	"github.com/fencegate/fencegate"
)

// leaseState is what a Holder's state machine changes (see State): the
// state and its cause, the registry's last answer, and what the Holder
// knows from the answers it trusts: the local safety deadline, the time
// before which an answer is no evidence of HELD, and the last HELD
// status proof. decideLease is the only function that computes a new one;
// the Holder stores it under its lock.
type leaseState struct {
	state State
	cause error
	// lease is the last registry answer (the grant kept from the acquire).
	lease Lease
	// deadline is the local safety deadline.
	deadline time.Time
	// doubtSince: HELD evidence counts only from requests sent at or
	// after it.
	doubtSince time.Time
	// proof is the last HELD status proof, asked for at proofSent and
	// valid for proofLife from its iat.
	proof     string
	proofSent time.Time
	proofLife time.Duration
}

// leaseEventKind says what happened to a Holder's lease.
type leaseEventKind int

const (
	// leaseRequested: the Holder was made; its acquire is to be sent.
	leaseRequested leaseEventKind = iota + 1
	// leaseAnswered: the registry answered (or failed to answer) a
	// request of the lease: op, sent, answer, err.
	leaseAnswered
	// leaseLooked: something looked at the state (State, Usable, an
	// effect, the keeper): the local deadline applies.
	leaseLooked
	// leaseRenewSent: a renewal is about to be sent.
	leaseRenewSent
	// leaseRejected: a sidecar's rejection says the grant is superseded
	// or no longer held (cause).
	leaseRejected
)

// leaseEvent is one input of decideLease. now is the local time it
// happens at (the Holder's clock), read by the caller.
type leaseEvent struct {
	kind leaseEventKind
	now  time.Time
	// leaseAnswered: the operation, the local time its request was sent,
	// the answer or the error, and the acquire's grant (kept in the lease
	// when an answer carries none).
	op     string
	sent   time.Time
	answer *Lease
	err    error
	grant  string
	// leaseRejected: the sidecar's rejection.
	cause error
}

// leaseParams are the Holder's settings the transition uses.
type leaseParams struct {
	safetyMargin  time.Duration
	renewFraction float64
}

// leaseActions is what the Holder does after storing the new state.
type leaseActions struct {
	// transition, when set, is the state change to announce: the Watch
	// channel closes, Done closes on a final state, the callbacks get it.
	transition *Transition
	// renew, when set, is the next renewal's schedule: the keeper renews
	// after (jittered by the Holder) from from.
	renew *renewPlan
}

// renewPlan schedules the next renewal at from + after (before jitter).
type renewPlan struct {
	from  time.Time
	after time.Duration
}

// Operations whose answers drive the state machine.
const (
	opAcquire = "acquire"
	opRenew   = "renew"
	opStatus  = "status"
	opRelease = "release"
)

// decideLease is the Holder's state machine as a pure transition: the new
// state and the actions for s after ev. It reads no clock (ev.now is the
// time), draws no randomness (the Holder jitters the renewal) and does no
// I/O. Final states are never left.
func decideLease(s leaseState, ev leaseEvent, p leaseParams) (leaseState, leaseActions) {
	d := leaseDecision{s: s, now: ev.now}
	switch ev.kind {
	case leaseRequested:
		d.move(StateRequested, nil, nil)
	case leaseLooked:
		d.brake()
	case leaseRenewSent:
		if d.s.state == StateHeld {
			d.move(StateRenewing, nil, nil)
		}
	case leaseRejected:
		d.doubt(ev.now, ev.cause, nil)
	case leaseAnswered:
		d.answered(ev, p)
	}
	return d.s, d.act
}

// leaseDecision is decideLease's working copy.
type leaseDecision struct {
	s   leaseState
	now time.Time
	act leaseActions
}

// move moves to state to. Final states are never left.
func (d *leaseDecision) move(to State, cause error, l *Lease) {
	if d.s.state == to || d.s.state.Final() {
		return
	}
	tr := Transition{From: d.s.state, To: to, At: d.now, Cause: cause}
	if l != nil {
		cp := *l
		tr.Lease = &cp
	}
	d.s.state, d.s.cause = to, cause
	d.act.transition = &tr
}

// doubt moves a lease that is not final to OWNERSHIP_UNKNOWN: new effects
// stop at once. Evidence of HELD then counts only from requests sent at
// or after since.
func (d *leaseDecision) doubt(since time.Time, cause error, l *Lease) {
	if d.s.state.Final() {
		return
	}
	if since.After(d.s.doubtSince) {
		d.s.doubtSince = since
	}
	d.move(StateOwnershipUnknown, cause, l)
}

// brake applies the local safety deadline. Passing it casts no doubt on
// the answers still to come: a request sent before now (a renewal in
// flight) that the registry answers HELD still proves the lease until its
// send time plus the TTL confirmed, and the deadline only ever counts from
// there. So the doubt keeps its time (a rejection's or an uncertain
// answer's), and such an answer can make the lease HELD again.
func (d *leaseDecision) brake() {
	if d.s.state.Usable() && !d.now.Before(d.s.deadline) {
		d.doubt(time.Time{}, ErrLocalDeadline, nil)
	}
}

// answered applies a registry answer to a request sent at ev.sent.
func (d *leaseDecision) answered(ev leaseEvent, p leaseParams) {
	if d.s.state.Final() {
		return
	}
	op, sent, l := ev.op, ev.sent, ev.answer
	if ev.err != nil {
		var ce *Error
		if errors.As(ev.err, &ce) {
			switch {
			case ce.Code() == fencegate.CodeLeaseNotHeld:
				st, _ := ce.Problem.Extra["state"].(string)
				d.end(st, ev.err, nil)
				return
			case ce.Code() == fencegate.CodeNotFound && op != opAcquire:
				// The registry does not know the lease (restored from an
				// old snapshot?): it is certainly not held.
				d.end(fencegate.StateExpired, ev.err, nil)
				return
			}
		}
		d.doubt(sent, fmt.Errorf("client: %s: outcome uncertain: %w", op, ev.err), nil)
		return
	}
	if l.Lease != d.s.lease.Lease && d.s.lease.Lease != "" {
		d.doubt(sent, fmt.Errorf("client: %s answered for lease %s, not %s", op, l.Lease, d.s.lease.Lease), l)
		return
	}
	if l.State != fencegate.StateHeld {
		d.end(l.State, nil, l)
		return
	}
	if op == opRelease {
		// A release answered HELD: impossible; trust nothing.
		d.doubt(sent, fmt.Errorf("client: release answered %s", l.State), l)
		return
	}
	life, rerr := remaining(l)
	if rerr != nil {
		d.doubt(sent, rerr, l)
		return
	}
	grant := ev.grant
	if l.Grant != "" {
		grant = l.Grant
	}
	d.s.lease = *l
	d.s.lease.Grant = grant
	if sent.Before(d.s.doubtSince) {
		return // older than the doubt: not evidence enough
	}
	if dl := sent.Add(life - p.safetyMargin); dl.After(d.s.deadline) {
		d.s.deadline = dl
		d.act.renew = &renewPlan{from: sent, after: time.Duration(float64(life) * p.renewFraction)}
	}
	if l.Status != "" && (d.s.proof == "" || !sent.Before(d.s.proofSent)) {
		if st, err := statusClaims(l.Status); err == nil {
			d.s.proof, d.s.proofSent = l.Status, sent
			d.s.proofLife = time.UnixMilli(int64(st.ExpiresAt)).Sub(time.UnixMilli(int64(st.IssuedAt)))
		}
	}
	if !d.now.Before(d.s.deadline) {
		d.doubt(time.Time{}, ErrLocalDeadline, l) // as brake
		return
	}
	if d.s.state == StateRenewing && op != opRenew {
		return // the renewal in flight will settle RENEWING
	}
	d.move(StateHeld, nil, l)
}

// end applies a registry state that is not HELD.
func (d *leaseDecision) end(registryState string, cause error, l *Lease) {
	switch registryState {
	case fencegate.StateReleased:
		d.move(StateReleased, cause, l)
	default: // EXPIRED, REVOKED (or unknown to this SDK): not held
		if cause == nil && registryState != fencegate.StateExpired {
			cause = fmt.Errorf("client: the registry reports the lease %s", registryState)
		}
		d.move(StateExpired, cause, l)
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
