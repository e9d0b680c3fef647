package sim

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/store"
)

// owner is a scripted worker. It acquires the lease, then runs its plan
// (writes of segments 1..k, renewals, a release), each step a gap after
// the one before. It waits for each write's answer, resending the same
// segment with the same payload when the answer is lost or says to retry;
// it stops for good on an answer that says it no longer owns the resource.
// It never checks its own lease before sending: a paused owner sends
// anyway, which is what the sidecar is for.
type owner struct {
	r    *round
	id   int
	name string
	plan []event
	step int

	reqN     int // acquire request IDs used
	attempts int
	holding  bool
	done     bool
	released bool
	grant    string
	proof    string
	lease    string
	fence    uint64

	seq     uint64 // next segment
	waiting uint64 // token of the write awaiting an answer (0: none)
	tries   int

	// For the hand-off latency: when the owner first asked for the lease,
	// when it got it, and when it first sent its first segment.
	askedAt, grantedAt, firstSentAt time.Duration
	asked, granted, firstSent       bool
	// releasedAt is when its release reached the registry.
	releasedAt  time.Duration
	releaseSeen bool
	// askNet and firstNet are the network fates of its first ask and of
	// its first segment's first send, firstLate that segment's late apply;
	// blocked: its first segment met an unknown outcome (MUTATION_UNKNOWN).
	askNet, firstNet netPlan
	firstLate        time.Duration
	blocked          bool
	// sdk is set when the owner is an SDK worker (sdk.go).
	sdk *sdkWorker
}

// acquire sends an acquire (the script's event; retries follow from it).
func (o *owner) acquire(e event) {
	if o.holding || o.done {
		return
	}
	if !o.asked {
		o.asked, o.askedAt, o.askNet = true, o.r.now(), e.Net
	}
	o.reqN++
	o.send(e.Net, fmt.Sprintf("req-%s-%d", o.name, o.reqN), true)
}

// send is one acquire attempt under request ID id. Only the first attempt
// of a request meets the network's faults; a retry reuses the request ID,
// so a lost answer is recovered with the same grant.
func (o *owner) send(n netPlan, id string, first bool) {
	r := o.r
	if !first {
		n = netPlan{}
	}
	o.attempts++
	if r.now() > horizon || o.attempts > 100 {
		o.done = true
		return
	}
	if n.ReqDrop {
		r.logf("%s: acquire %s lost on its way", o.name, id)
		r.after(answerTimeout, "acquire retry", func() { o.send(n, id, false) })
		return
	}
	r.after(n.ReqDelay, "acquire at registry", func() {
		res, err := r.reg.Acquire(context.Background(), registry.AcquireRequest{Resource: mainResource, Owner: o.name,
			RequestID: id, TTL: r.sc.Config.TTL})
		var busy *registry.BusyError
		switch {
		case errors.As(err, &busy):
			r.logf("%s: acquire %s: held until %s", o.name, id, busy.HolderExpiresAt.Sub(r.start))
			retry := min(busy.HolderExpiresAt.Sub(r.start), r.now()+pollInterval)
			r.at(retry, "acquire poll", func() { o.send(n, id, false) })
			return
		case err != nil:
			r.logf("%s: acquire %s failed: %v", o.name, id, err)
			o.done = true
			return
		}
		g := r.or.granted(res)
		r.logf("%s: acquire %s: lease %s fence %d (%s)", o.name, id, g.lease, g.fence, res.View.State)
		if n.RespDrop {
			r.logf("%s: acquire answer lost", o.name)
			r.after(answerTimeout, "acquire retry", func() { o.send(n, id, false) })
			return
		}
		r.after(n.RespDelay, "acquire answer", func() {
			if o.holding || o.done {
				return
			}
			if res.View.State != fencegate.StateHeld {
				// A repeated request ID returned a lease that ended: ask anew.
				o.reqN++
				o.send(netPlan{}, fmt.Sprintf("req-%s-%d", o.name, o.reqN), false)
				return
			}
			o.holding = true
			if !o.granted {
				o.granted, o.grantedAt = true, r.now()
			}
			o.grant, o.proof, o.lease, o.fence = string(res.Grant), string(res.Status), g.lease, g.fence
			o.next()
		})
	})
}

// next schedules the next step of the plan.
func (o *owner) next() {
	if o.done || o.step >= len(o.plan) {
		o.done = true
		return
	}
	e := o.plan[o.step]
	o.r.after(e.At, "plan step", func() { o.run(e) })
}

func (o *owner) run(e event) {
	if o.done {
		return
	}
	r := o.r
	r.logf("%v", e)
	switch e.Kind {
	case evRenew:
		o.step++
		o.renew(e.Net)
		o.next()
	case evRelease:
		o.step++
		o.released = true
		o.next() // only a zombie write can follow
		r.after(e.Net.ReqDelay, "release at registry", func() {
			o.releasedAt, o.releaseSeen = r.now(), true
			if r.sabotage == SabotageReleaseIgnored {
				r.logf("%s: the registry answers the release of %s but keeps the lease", o.name, o.lease)
				return
			}
			res, err := r.reg.Release(context.Background(), o.name, o.lease)
			if err == nil {
				r.or.proved(res)
				if res.View.State == fencegate.StateReleased {
					r.or.end(o.lease, r.now(), "released")
				}
			}
			r.logf("%s: released lease %s: %v", o.name, o.lease, err)
		})
	case evWrite:
		if o.released && !e.Zombie {
			o.done = true
			return
		}
		o.tries = 0
		if !o.firstSent && o.seq == 1 && !e.Zombie {
			o.firstSent, o.firstSentAt, o.firstNet, o.firstLate = true, r.now(), e.Net, e.Late
		}
		if e.Skip {
			o.skip(e)
		}
		o.write(e)
	}
}

func (o *owner) renew(n netPlan) {
	r := o.r
	if n.ReqDrop {
		r.logf("%s: renew lost on its way", o.name)
		return
	}
	r.after(n.ReqDelay, "renew at registry", func() {
		res, err := r.reg.Renew(context.Background(), o.name, o.lease, 0)
		if err != nil {
			r.logf("%s: renew: %v", o.name, err)
			if errors.Is(err, registry.ErrNotHeld) {
				r.or.proved(res)
				if !n.RespDrop {
					// The SDK's holder goes EXPIRED on this answer: no new effects.
					r.after(n.RespDelay, "renew refused", func() { o.lost() })
				}
			}
			return
		}
		r.or.touch(res)
		r.logf("%s: renewed lease %s until %s", o.name, o.lease, time.UnixMilli(res.View.Lease.ExpiresAt).Sub(r.start))
		if n.RespDrop {
			return
		}
		r.after(n.RespDelay, "renew answer", func() { o.proof = string(res.Status) })
	})
}

// lost: the registry said the lease is no longer held. The owner stops,
// unless it is a zombie, whose one late write is the point.
func (o *owner) lost() {
	if o.released {
		return
	}
	o.r.logf("%s: stops (the registry says the lease is not held)", o.name)
	o.done = true
}

// skip sends, at once and without waiting for its answer, the segment
// after the current one: out of order.
func (o *owner) skip(e event) {
	r := o.r
	proof := ""
	if r.sc.Config.Proof {
		proof = o.proof
	}
	w := newWire(mainPath, o.name, o.grant, proof, o.seq+1, []byte(fmt.Sprintf("%s/f%d/s%d/skipped-ahead", o.name, o.fence, o.seq+1)))
	out := r.serve(w, e.Replica, delivery{})
	r.logf("%s: segment %d sent before %d at replica %d -> %v", o.name, o.seq+1, o.seq, e.Replica%len(r.sidecars), out)
}

// write sends the current segment (again, on a retry: same payload).
func (o *owner) write(e event) {
	r := o.r
	if o.done {
		return
	}
	o.tries++
	if o.tries > 4 || r.now() > horizon {
		r.logf("%s: gives up segment %d", o.name, o.seq)
		o.done = true
		return
	}
	n, fault := e.Net, e.Fault
	if o.tries > 1 {
		n, fault = netPlan{}, bfNone
	}
	proof := ""
	if r.sc.Config.Proof {
		proof = o.proof
	}
	seq := o.seq
	w := newWire(mainPath, o.name, o.grant, proof, seq, []byte(fmt.Sprintf("%s/f%d/s%d", o.name, o.fence, seq)))
	r.seq++
	token := r.seq
	o.waiting = token
	r.after(answerTimeout, "write timeout", func() {
		if o.waiting == token && !o.done {
			r.logf("%s: no answer for segment %d: sends it again", o.name, seq)
			o.write(e)
		}
	})
	first := o.tries == 1
	deliver := func(n netPlan, fault backendFault, dup bool) {
		mid := e.StoreMid && first && !dup
		out := r.serve(w, e.Replica, delivery{fault: fault, statusDrop: n.StatusDrop, storeMid: mid, storeRestore: e.Restore, late: e.Late})
		how := ""
		if dup {
			how = " (duplicate)"
		}
		r.logf("%s: segment %d (fence %d)%s at replica %d -> %v", o.name, seq, o.fence, how, e.Replica%len(r.sidecars), out)
		if n.RespDrop {
			return
		}
		r.after(n.RespDelay, "write answer", func() { o.answered(e, token, out) })
	}
	if n.ReqDrop {
		r.logf("%s: segment %d lost on its way", o.name, seq)
	} else {
		r.after(n.ReqDelay, "delivery", func() { deliver(n, fault, false) })
	}
	if n.Dup {
		r.after(n.ReqDelay+n.DupDelay, "duplicate delivery", func() { deliver(netPlan{}, bfNone, true) })
	}
}

// answered handles the answer to the write with token.
func (o *owner) answered(e event, token uint64, out outcome) {
	if o.waiting != token || o.done {
		return
	}
	o.waiting = 0
	r := o.r
	switch {
	case e.Zombie:
		r.logf("%s: zombie write answered %v", o.name, out)
		o.done = true
	case out.status < 300, out.code == fencegate.CodeReplayIncomplete:
		if e.Conflict {
			o.conflict(e, o.seq)
		}
		o.seq++
		o.step++
		o.next()
	case out.code == fencegate.CodeMutationUnknown:
		if o.seq == 1 {
			o.blocked = true // its hand-off waits for an unknown outcome
		}
		// Its own write's answer was lost (504): send it again soon (on an
		// idempotent route that settles it). Another mutation's outcome is
		// unknown (409): wait for its reconciliation.
		wait := 2 * time.Second
		if out.status == http.StatusGatewayTimeout {
			wait = 200 * time.Millisecond
		}
		r.after(wait, "retry after unknown", func() { o.write(e) })
	case out.code == fencegate.CodeStatusStale && r.sc.Config.Proof:
		o.renew(netPlan{})
		r.after(50*time.Millisecond, "retry with a fresh proof", func() { o.write(e) })
	case out.code == fencegate.CodeRegistryUnavailable, out.code == fencegate.CodeResourceBusy,
		out.code == fencegate.CodeBackendUnavailable, out.code == fencegate.CodeStoreUnavailable,
		out.status == http.StatusBadGateway:
		r.after(200*time.Millisecond, "retry", func() { o.write(e) })
	default:
		r.logf("%s: stops (%s)", o.name, out)
		o.done = true
	}
}

// conflict sends accepted segment seq again with another payload: the
// sidecar must answer SEGMENT_CONFLICT and quarantine it (design 6.6,
// step 2), and the backend must never see it.
func (o *owner) conflict(e event, seq uint64) {
	r := o.r
	proof := ""
	if r.sc.Config.Proof {
		proof = o.proof
	}
	body := []byte(fmt.Sprintf("%s/f%d/s%d/another-payload", o.name, o.fence, seq))
	w := newWire(mainPath, o.name, o.grant, proof, seq, body)
	r.res.Seen[seenConflict]++
	r.after(10*time.Millisecond, "conflicting resend", func() {
		out := r.serve(w, e.Replica, delivery{})
		r.logf("%s: segment %d sent again with another payload at replica %d -> %v", o.name, seq, e.Replica%len(r.sidecars), out)
		switch {
		case out.status < 300:
			r.violate(&r.res.Conflicts, fmt.Sprintf("segment %d of fence %d sent again with another payload was answered %v", seq, o.fence, out))
		case out.code == fencegate.CodeSegmentConflict:
			q, err := r.st.ListQuarantined(context.Background(), mainResource)
			want := payloadDigest(http.MethodPut, mainPath, body)
			if err != nil || !slices.ContainsFunc(q, func(q store.Quarantine) bool {
				return q.Fence == o.fence && q.Seq == seq && q.PayloadDigest == want
			}) {
				r.violate(&r.res.Conflicts, fmt.Sprintf("SEGMENT_CONFLICT for segment %d of fence %d but no quarantine entry holds its payload (%v)", seq, o.fence, err))
			}
		case out.code == fencegate.CodeSegmentGap:
			// A gap is the answer for a segment out of order; one the
			// store holds a receipt of was accepted, and is a conflict.
			key := store.ReceiptKey{Resource: mainResource, Fence: o.fence, Seq: seq}
			if _, err := r.st.Receipt(context.Background(), key); err == nil {
				r.violate(&r.res.Conflicts, fmt.Sprintf("segment %d of fence %d sent again with another payload was answered SEGMENT_GAP, though the store holds its receipt", seq, o.fence))
			}
		}
	})
}
