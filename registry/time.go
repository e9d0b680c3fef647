package registry

import "time"

// The registry's time across processes (docs/design.md section 10, "The
// registry's time across replicas").
//
// Each registry process reads its own clock (Options.Clock), and several
// processes share a backend (Redis, etcd): a process whose clock is behind
// another's would decide a lease still HELD that the other already found
// expired, renew it, or sign grants whose iat and exp go back. So every
// lease decision and view reads the registry's time too (Meta.Time,
// the latest time any process committed a lease decision at) and decides
// at DecisionTime: its own clock, raised to the registry's time by at most
// the process's skew budget (Options.MaxClockSkew). A process behind by up
// to the budget decides at the registry's time, so a lease's expiry never
// goes back across processes whose clocks agree within the budget. The cap
// keeps a process whose clock was stepped far ahead from dragging every
// other process's grants and proofs forward with it: they sign iat and exp
// at most the budget after their own clock. A process behind by more than
// the budget decides at its clock plus the budget, and the Registry logs
// it and exports the excess (fencegate_registry_clock_behind_seconds):
// only lease states it answers can be behind the other processes' by the
// excess; fences are data and never depend on a clock.

// DefaultMaxClockSkew is the default skew budget: the sidecars' default
// trust.clockSkew, so a proof signed at the registry's time is never
// "issued in the future" for a sidecar whose clock agrees with the
// slowest registry process.
const DefaultMaxClockSkew = time.Second

// DecisionTime is the time a step decides at: local, the process's clock,
// raised toward the registry's time m.Time by at most maxSkew, that is
// max(local, min(m.Time, local+maxSkew)). It is never before local, and
// never before the registry's time when local is behind it by at most
// maxSkew. A maxSkew of 0 or less decides at local.
func DecisionTime(local time.Time, m Meta, maxSkew time.Duration) time.Time {
	if maxSkew <= 0 || m.Time <= ms(local) {
		return local
	}
	if reg, limit := time.UnixMilli(m.Time), local.Add(maxSkew); reg.Before(limit) {
		return reg
	}
	return local.Add(maxSkew)
}

// ClockBehind is how far local is behind the registry's time beyond
// maxSkew (0 when it is not): by this much a step at local decides
// earlier than the registry's time.
func ClockBehind(local time.Time, m Meta, maxSkew time.Duration) time.Duration {
	return max(0, time.UnixMilli(m.Time).Sub(local.Add(max(0, maxSkew))))
}

// raiseTime raises m's time to at, never lowering it.
func (m *Meta) raiseTime(at time.Time) { m.Time = max(m.Time, ms(at)) }

// stampTime makes ch, a lease decision's change, carry the registry's
// time raised to at: a change that writes the meta already carries m
// (raised here), and one that writes anything else gets the meta too
// when at raises its time. An empty change stays empty.
func stampTime(ch *Change, m Meta, at time.Time) {
	if ch.Empty() {
		return
	}
	if ch.Meta != nil {
		ch.Meta.raiseTime(at)
		return
	}
	if ms(at) > m.Time {
		m.raiseTime(at)
		ch.Meta = &m
	}
}

// resourceAt is v, a resource read whose holder's state was computed at
// local (Backend.Resource), with that state computed at
// DecisionTime(local, v.Meta, maxSkew) instead: the view holds everything
// the state is computed from.
func resourceAt(v ResourceView, local time.Time, maxSkew time.Duration) ResourceView {
	if h := v.Holder; h != nil {
		hv := view(h.Lease, v.Meta, v.PolicyGeneration, DecisionTime(local, v.Meta, maxSkew))
		v.Holder = &hv
	}
	return v
}
