package client

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/fencegate/fencegate"
)

// The state machine's transitions, one table row each: decideLease from
// a state and an event to the new state and its actions. The Holder's
// behaviour over a real registry is the rest of the package's tests.

var (
	t0     = time.UnixMilli(1_800_000_000_000).UTC()
	params = leaseParams{safetyMargin: time.Second, renewFraction: 0.5}
)

// proofAt is a compact JWS whose payload is a lockStatus.v1 issued at iat
// and valid for life (decideLease reads the payload only: signatures are
// the verifier's business).
func proofAt(iat time.Time, life time.Duration) string {
	b, _ := json.Marshal(fencegate.Status{Schema: fencegate.StatusSchema, State: fencegate.StateHeld,
		IssuedAt: uint64(iat.UnixMilli()), ExpiresAt: uint64(iat.Add(life).UnixMilli())})
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"EdDSA"}`)) + "." + enc(b) + "." + enc([]byte("sig"))
}

// heldAnswer is a registry answer: lease-1 HELD for ttl from iat, with a
// proof issued at iat.
func heldAnswer(iat time.Time, ttl time.Duration) *Lease {
	return &Lease{Lease: "lease-1", State: fencegate.StateHeld, ExpiresAt: iat.Add(ttl), Status: proofAt(iat, 5*time.Second), GrantDigest: "sha256:g"}
}

func endedAnswer(state string) *Lease { return &Lease{Lease: "lease-1", State: state} }

func problem(code fencegate.Code, extra map[string]any) error {
	return &Error{StatusCode: http.StatusConflict, Problem: &fencegate.Problem{Code: code, Extra: extra}}
}

// held is a Holder state HELD on lease-1 until deadline.
func held(deadline time.Time) leaseState {
	return leaseState{state: StateHeld, lease: Lease{Lease: "lease-1", State: fencegate.StateHeld, Grant: "grant-1"}, deadline: deadline}
}

func inState(st State, deadline time.Time) leaseState {
	s := held(deadline)
	s.state = st
	return s
}

func answered(op string, sent time.Time, l *Lease, err error) leaseEvent {
	return leaseEvent{kind: leaseAnswered, op: op, sent: sent, answer: l, err: err, grant: "grant-1"}
}

func TestDecideLease(t *testing.T) {
	uncertain := errors.New("connection reset")
	rejected := errors.New("sidecar: STALE_OWNER")
	for _, c := range []struct {
		name string
		from leaseState
		ev   leaseEvent
		now  time.Time
		// want: the state after, whether a transition is announced (and
		// its cause matches wantCause), the deadline after, and whether
		// a renewal is scheduled (and from when, after how long).
		want       State
		announce   bool
		wantCause  error
		causeIsAny bool
		deadline   time.Time
		renewAfter time.Duration
	}{
		{name: "made: REQUESTED", from: leaseState{}, ev: leaseEvent{kind: leaseRequested},
			want: StateRequested, announce: true},
		{name: "acquire answered HELD: deadline sent+ttl-margin, renew at half the ttl",
			from: leaseState{state: StateRequested}, ev: answered(opAcquire, t0, heldAnswer(t0, 10*time.Second), nil), now: t0.Add(100 * time.Millisecond),
			want: StateHeld, announce: true, deadline: t0.Add(9 * time.Second), renewAfter: 5 * time.Second},
		{name: "acquire answered HELD after its deadline: OWNERSHIP_UNKNOWN (local deadline)",
			from: leaseState{state: StateRequested}, ev: answered(opAcquire, t0, heldAnswer(t0, 10*time.Second), nil), now: t0.Add(9 * time.Second),
			want: StateOwnershipUnknown, announce: true, wantCause: ErrLocalDeadline, deadline: t0.Add(9 * time.Second), renewAfter: 5 * time.Second},
		{name: "renewal sent: HELD to RENEWING", from: held(t0.Add(9 * time.Second)), ev: leaseEvent{kind: leaseRenewSent}, now: t0,
			want: StateRenewing, announce: true, deadline: t0.Add(9 * time.Second)},
		{name: "renewal sent while unknown: stays", from: inState(StateOwnershipUnknown, t0), ev: leaseEvent{kind: leaseRenewSent}, now: t0,
			want: StateOwnershipUnknown, deadline: t0},
		{name: "renew answered HELD: RENEWING to HELD, deadline extended",
			from: inState(StateRenewing, t0.Add(9*time.Second)), ev: answered(opRenew, t0.Add(5*time.Second), heldAnswer(t0.Add(5*time.Second), 10*time.Second), nil), now: t0.Add(5 * time.Second),
			want: StateHeld, announce: true, deadline: t0.Add(14 * time.Second), renewAfter: 5 * time.Second},
		{name: "status answered HELD while RENEWING: the renewal settles it",
			from: inState(StateRenewing, t0.Add(9*time.Second)), ev: answered(opStatus, t0.Add(5*time.Second), heldAnswer(t0.Add(5*time.Second), 10*time.Second), nil), now: t0.Add(5 * time.Second),
			want: StateRenewing, deadline: t0.Add(14 * time.Second), renewAfter: 5 * time.Second},
		{name: "an older answer does not shorten the deadline",
			from: held(t0.Add(20 * time.Second)), ev: answered(opStatus, t0, heldAnswer(t0, 10*time.Second), nil), now: t0,
			want: StateHeld, deadline: t0.Add(20 * time.Second)},
		{name: "renew lost: OWNERSHIP_UNKNOWN", from: inState(StateRenewing, t0.Add(9*time.Second)), ev: answered(opRenew, t0, nil, uncertain), now: t0,
			want: StateOwnershipUnknown, announce: true, causeIsAny: true, deadline: t0.Add(9 * time.Second)},
		{name: "unknown, status answered HELD for a request sent after the doubt: HELD",
			from: func() leaseState {
				s := inState(StateOwnershipUnknown, t0.Add(9*time.Second))
				s.doubtSince = t0.Add(time.Second)
				return s
			}(),
			ev: answered(opStatus, t0.Add(2*time.Second), heldAnswer(t0.Add(2*time.Second), 10*time.Second), nil), now: t0.Add(2 * time.Second),
			want: StateHeld, announce: true, deadline: t0.Add(11 * time.Second), renewAfter: 5 * time.Second},
		{name: "unknown, HELD for a request sent before the doubt: no evidence",
			from: func() leaseState {
				s := inState(StateOwnershipUnknown, t0.Add(9*time.Second))
				s.doubtSince = t0.Add(3 * time.Second)
				return s
			}(),
			ev: answered(opStatus, t0.Add(2*time.Second), heldAnswer(t0.Add(2*time.Second), 10*time.Second), nil), now: t0.Add(4 * time.Second),
			want: StateOwnershipUnknown, deadline: t0.Add(9 * time.Second)},
		{name: "answered EXPIRED: final", from: held(t0.Add(9 * time.Second)), ev: answered(opRenew, t0, endedAnswer(fencegate.StateExpired), nil), now: t0,
			want: StateExpired, announce: true, deadline: t0.Add(9 * time.Second)},
		{name: "answered REVOKED: EXPIRED with a cause", from: held(t0.Add(9 * time.Second)), ev: answered(opStatus, t0, endedAnswer(fencegate.StateRevoked), nil), now: t0,
			want: StateExpired, announce: true, causeIsAny: true, deadline: t0.Add(9 * time.Second)},
		{name: "release answered RELEASED: final", from: held(t0.Add(9 * time.Second)), ev: answered(opRelease, t0, endedAnswer(fencegate.StateReleased), nil), now: t0,
			want: StateReleased, announce: true, deadline: t0.Add(9 * time.Second)},
		{name: "release answered HELD: trust nothing", from: held(t0.Add(9 * time.Second)), ev: answered(opRelease, t0, heldAnswer(t0, 10*time.Second), nil), now: t0,
			want: StateOwnershipUnknown, announce: true, causeIsAny: true, deadline: t0.Add(9 * time.Second)},
		{name: "LEASE_NOT_HELD problem: its state", from: held(t0.Add(9 * time.Second)),
			ev: answered(opRenew, t0, nil, problem(fencegate.CodeLeaseNotHeld, map[string]any{"state": fencegate.StateReleased})), now: t0,
			want: StateReleased, announce: true, causeIsAny: true, deadline: t0.Add(9 * time.Second)},
		{name: "NOT_FOUND for a renewal: certainly not held", from: held(t0.Add(9 * time.Second)),
			ev: answered(opRenew, t0, nil, problem(fencegate.CodeNotFound, nil)), now: t0,
			want: StateExpired, announce: true, causeIsAny: true, deadline: t0.Add(9 * time.Second)},
		{name: "an answer for another lease: doubt", from: held(t0.Add(9 * time.Second)),
			ev: answered(opStatus, t0, &Lease{Lease: "lease-2", State: fencegate.StateHeld}, nil), now: t0,
			want: StateOwnershipUnknown, announce: true, causeIsAny: true, deadline: t0.Add(9 * time.Second)},
		{name: "looked before the deadline: stays", from: held(t0.Add(9 * time.Second)), ev: leaseEvent{kind: leaseLooked}, now: t0.Add(8 * time.Second),
			want: StateHeld, deadline: t0.Add(9 * time.Second)},
		{name: "looked at the deadline: OWNERSHIP_UNKNOWN", from: held(t0.Add(9 * time.Second)), ev: leaseEvent{kind: leaseLooked}, now: t0.Add(9 * time.Second),
			want: StateOwnershipUnknown, announce: true, wantCause: ErrLocalDeadline, deadline: t0.Add(9 * time.Second)},
		{name: "RENEWING past the deadline: OWNERSHIP_UNKNOWN", from: inState(StateRenewing, t0), ev: leaseEvent{kind: leaseLooked}, now: t0,
			want: StateOwnershipUnknown, announce: true, wantCause: ErrLocalDeadline, deadline: t0},
		{name: "sidecar rejection: OWNERSHIP_UNKNOWN with its cause", from: held(t0.Add(9 * time.Second)), ev: leaseEvent{kind: leaseRejected, cause: rejected}, now: t0,
			want: StateOwnershipUnknown, announce: true, wantCause: rejected, deadline: t0.Add(9 * time.Second)},
		{name: "final states are never left: HELD answer after RELEASED", from: inState(StateReleased, t0),
			ev: answered(opStatus, t0, heldAnswer(t0, 10*time.Second), nil), now: t0,
			want: StateReleased, deadline: t0},
		{name: "final states are never left: rejection after EXPIRED", from: inState(StateExpired, t0), ev: leaseEvent{kind: leaseRejected, cause: rejected}, now: t0,
			want: StateExpired, deadline: t0},
	} {
		t.Run(c.name, func(t *testing.T) {
			ev := c.ev
			ev.now = c.now
			got, act := decideLease(c.from, ev, params)
			if got.state != c.want {
				t.Errorf("state %s, want %s", got.state, c.want)
			}
			if (act.transition != nil) != c.announce {
				t.Fatalf("transition %+v, want one: %v", act.transition, c.announce)
			}
			if tr := act.transition; tr != nil {
				if tr.From != c.from.state || tr.To != c.want || !tr.At.Equal(c.now) {
					t.Errorf("transition %s -> %s at %v, want %s -> %s at %v", tr.From, tr.To, tr.At, c.from.state, c.want, c.now)
				}
				switch {
				case c.wantCause != nil && !errors.Is(tr.Cause, c.wantCause):
					t.Errorf("cause %v, want %v", tr.Cause, c.wantCause)
				case c.causeIsAny && tr.Cause == nil:
					t.Error("no cause, want one")
				case c.wantCause == nil && !c.causeIsAny && tr.Cause != nil:
					t.Errorf("cause %v, want none", tr.Cause)
				}
				if !errors.Is(got.cause, tr.Cause) {
					t.Errorf("state's cause %v, transition's %v", got.cause, tr.Cause)
				}
			}
			if !got.deadline.Equal(c.deadline) {
				t.Errorf("deadline %v, want %v", got.deadline, c.deadline)
			}
			switch r := act.renew; {
			case c.renewAfter == 0 && r != nil:
				t.Errorf("renewal scheduled %+v, want none", r)
			case c.renewAfter != 0 && (r == nil || r.after != c.renewAfter || !r.from.Equal(ev.sent)):
				t.Errorf("renewal %+v, want after %s from %v", r, c.renewAfter, ev.sent)
			}
		})
	}
}

// TestDecideLeaseKeepsEvidence: a HELD answer keeps the lease (with the
// acquire's grant when the answer carries none) and the newest proof; an
// answer asked for before the kept proof does not replace it.
func TestDecideLeaseKeepsEvidence(t *testing.T) {
	s, _ := decideLease(leaseState{state: StateRequested}, leaseEvent{kind: leaseAnswered, op: opAcquire, sent: t0, now: t0,
		answer: heldAnswer(t0, 10*time.Second), grant: "grant-1"}, params)
	if s.lease.Lease != "lease-1" || s.lease.Grant != "grant-1" || s.proof == "" || !s.proofSent.Equal(t0) || s.proofLife != 5*time.Second {
		t.Fatalf("after the acquire: lease %q grant %q proof sent %v life %s", s.lease.Lease, s.lease.Grant, s.proofSent, s.proofLife)
	}
	first := s.proof
	later := heldAnswer(t0.Add(2*time.Second), 10*time.Second)
	s, _ = decideLease(s, answered(opStatus, t0.Add(2*time.Second), later, nil).at(t0.Add(2*time.Second)), params)
	if s.proof != later.Status || !s.proofSent.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("a newer proof was not kept")
	}
	older := heldAnswer(t0.Add(time.Second), 10*time.Second)
	s, _ = decideLease(s, answered(opStatus, t0.Add(time.Second), older, nil).at(t0.Add(3*time.Second)), params)
	if s.proof != later.Status || s.proof == first {
		t.Errorf("an answer asked for before the kept proof replaced it")
	}
	if s.lease.Grant != "grant-1" {
		t.Errorf("grant %q, want the acquire's", s.lease.Grant)
	}
}

func (e leaseEvent) at(now time.Time) leaseEvent {
	e.now = now
	return e
}

// TestDecideLeaseDeadlineInFlight: the local deadline passes while a
// renewal sent before it is in flight; the registry's HELD answer to it
// still proves the lease from its send time, so the lease is HELD again
// (deadline: that send time plus the TTL, minus the margin). A sidecar's
// rejection, by contrast, discredits every answer to a request sent
// before it.
func TestDecideLeaseDeadlineInFlight(t *testing.T) {
	s := held(t0.Add(9 * time.Second))
	s, _ = decideLease(s, leaseEvent{kind: leaseRenewSent, now: t0.Add(8 * time.Second)}, params)
	s, _ = decideLease(s, leaseEvent{kind: leaseLooked, now: t0.Add(9 * time.Second)}, params)
	if s.state != StateOwnershipUnknown || !errors.Is(s.cause, ErrLocalDeadline) {
		t.Fatalf("at the deadline: %s (%v), want OWNERSHIP_UNKNOWN by the local deadline", s.state, s.cause)
	}
	renewed := answered(opRenew, t0.Add(8*time.Second), heldAnswer(t0.Add(8*time.Second), 10*time.Second), nil).at(t0.Add(9500 * time.Millisecond))
	got, act := decideLease(s, renewed, params)
	if got.state != StateHeld || act.transition == nil || !got.deadline.Equal(t0.Add(17*time.Second)) {
		t.Fatalf("the renewal's answer: %s, deadline %v, want HELD until %v", got.state, got.deadline, t0.Add(17*time.Second))
	}

	s, _ = decideLease(held(t0.Add(9*time.Second)), leaseEvent{kind: leaseRejected, now: t0.Add(8500 * time.Millisecond), cause: errors.New("STALE_OWNER")}, params)
	if got, _ := decideLease(s, renewed, params); got.state != StateOwnershipUnknown {
		t.Fatalf("after a rejection, an answer to a request sent before it: %s, want OWNERSHIP_UNKNOWN", got.state)
	}
}
