package client

import (
	"context"
	"errors"
	"time"
)

// Context returns a context that is cancelled when the Holder loses its
// ownership for good, as etcd's session Done() and a Consul lock's
// channel are: run the work that needs the lease under it.
//
//	ctx := h.Context() // or merge it with the worker's own context
//	if err := work(ctx); ctx.Err() != nil {
//		log.Print(context.Cause(ctx)) // a *StateError: why the lease is gone
//	}
//
// It is cancelled when the Holder
//
//   - is RELEASED or EXPIRED (the registry says the lease expired, was
//     revoked, or released; also when WithLifetime's context ends);
//   - passes its local safety deadline without a confirmed renewal
//     (OWNERSHIP_UNKNOWN by ErrLocalDeadline): the lease could not be
//     renewed in time, whatever happens next;
//   - is told by a sidecar that a newer owner's fence was accepted
//     (STALE_OWNER).
//
// It is not cancelled by an uncertain renewal while the local deadline
// is still ahead: the Holder refuses effects meanwhile (Usable,
// Transport) and rides the outage out when the registry answers again.
// context.Cause(ctx) is a *StateError (errors.Is(cause, ErrNotHolding))
// with the state and its cause. A cancelled Context stays cancelled,
// even if a renewal's late answer makes the Holder HELD again; the
// Holder's own gate (Usable) is what effects go through either way.
// With WithoutBackground nothing watches the deadline between looks:
// the context is cancelled at the first look (State, Usable, an effect)
// past it.
func (h *Holder) Context() context.Context { return h.life }

// handOut makes the Holder's Context follow its state: Hold calls it when
// it returns the Holder, whose lease it has just confirmed. (Hold's own
// confirmation of a waiting acquire passes through OWNERSHIP_UNKNOWN by
// the local deadline before the Holder is handed out.)
func (h *Holder) handOut() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.handedOut = true
	if !h.ls.state.Usable() {
		h.lifeEnd(&StateError{State: h.ls.state, Cause: h.ls.cause})
	}
}

// endLifeLocked cancels the Holder's Context when the state after ev
// (and its transition tr, if any) has lost ownership for good (see
// Context): a final state, a STALE_OWNER rejection, or the local deadline
// passed in a state that is not usable, whatever made it so.
func (h *Holder) endLifeLocked(now time.Time, tr *Transition) {
	if !h.handedOut || h.life.Err() != nil {
		return
	}
	st, cause := h.ls.state, h.ls.cause
	switch {
	case st.Final():
	case tr != nil && st == StateOwnershipUnknown && errors.Is(tr.Cause, ErrStaleOwner):
	case !st.Usable() && !now.Before(h.ls.deadline):
		if !errors.Is(cause, ErrLocalDeadline) {
			cause = errors.Join(ErrLocalDeadline, cause)
		}
	default:
		return
	}
	h.lifeEnd(&StateError{State: st, Cause: cause})
}

// endLife cancels the Context of a Holder that Hold does not hand out.
func (h *Holder) endLife() {
	h.lifeEnd(&StateError{State: h.State(), Cause: errors.New("client: Hold did not hand out this Holder")})
}
