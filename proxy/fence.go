package proxy

import (
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/store"
)

// fence runs step 4, the store's decision: Begin on the fence and segment
// order, waiting while another mutation of the resource is in flight; a
// PROCEED is forwarded (forward.go), a replay answered from its receipt.
func (p *Proxy) fence(a *attempt) outcome {
	// The input is validated once, with the store's own rules, before
	// Begin: input the store would refuse is bad input, never a store
	// outage. Now, Deadline and QuietAt are set as begin sets them.
	in := beginInput(a)
	p.times(&in, p.now())
	if err := in.Validate(); err != nil {
		return a.refused(p.inputRefusal(a, err, false), 0)
	}
	res, sendBy, err := p.begin(a, in)
	if errors.As(err, new(*store.InputError)) {
		return a.refused(p.inputRefusal(a, err, true), 0)
	}
	if err != nil {
		p.log.Error("store Begin failed; rejecting (fail closed)", zap.String("resource", a.resource), zap.Error(err))
		return a.refused(storeFailure(err), time.Second)
	}
	switch res.Decision {
	case store.DecisionProceed:
		a.cov.fence = true // Begin PROCEEDed for this request's (fence, seq)
		return p.forward(a, res, sendBy)
	case store.DecisionReplay:
		return outcome{result: resultReplayed, req: a.req, a: a, receipt: res.Receipt}
	case store.DecisionBusy:
		retry := time.Second
		if res.Mutation != nil {
			retry = max(clock.Until(p.clk, res.Mutation.Deadline), time.Second)
		}
		return a.refused(reject(res.Code(), "another mutation of this resource is still in flight").with("retryable", true), retry)
	default:
		return a.refused(decisionRejection(res), 0)
	}
}

// beginInput is what the attempt asks the store. The evidence carries the
// grant's issuer lineage ("" for a registry before lineages): a lower
// fence of a lineage the record never saw superseded is a registry that
// did not continue above the highest fence (FENCE_REGRESSION and a pause,
// whatever retention deleted). Now, Deadline and QuietAt are set by times.
func beginInput(a *attempt) store.BeginInput {
	g := a.grant
	return store.BeginInput{
		Resource:      a.resource,
		Fence:         g.FenceToken,
		Root:          g.OperationRoot,
		Seq:           a.seq,
		PayloadDigest: a.payload,
		GrantDigest:   a.digest,
		Lease:         g.Lease,
		Owner:         a.caller,
		Evidence:      store.Evidence{IssuerEpoch: g.IssuerEpoch, BackendRevision: g.BackendRevision, Lineage: g.Lineage},
		RetryUnknown:  a.rt.IdempotencyKey,
	}
}

// inputRefusal is the refusal of a Begin input the store's rules
// (store.BeginInput.Validate: segment in 1..fencegate.MaxSeq, resource,
// root and lease within fencegate.MaxResourceLen, fencegate.MaxRootLen and
// store.MaxLeaseLen, no control characters, ...) refuse: err is the
// validation's (byStore false), or Begin's, should the store still refuse
// an input the sidecar validated (byStore true). It is answered as bad
// input with the field's code, never taken for a store outage; what cannot
// be the client's fault (a computed field, the store disagreeing with its
// own rules) is logged as a sidecar bug.
func (p *Proxy) inputRefusal(a *attempt, err error, byStore bool) *rejection {
	var ie *store.InputError
	switch {
	case !errors.As(err, &ie):
		p.log.Error("BUG: BeginInput.Validate returned an error that is not a *store.InputError", zap.Error(err))
		return reject(fencegate.CodeFenceHeaderInvalid, "the sidecar could not form a store input from this request: "+err.Error())
	case byStore:
		// Nothing was read or written.
		p.log.Error("BUG: the store refused a Begin input the sidecar had validated; rejecting as bad input",
			zap.String("resource", a.resource), zap.Error(err))
	default:
		if _, fromRequest := ie.RequestCode(); !fromRequest {
			p.log.Error("BUG: the sidecar formed a store input the store refuses; rejecting as bad input",
				zap.String("resource", a.resource), zap.Error(err))
		}
	}
	return inputRejection(ie)
}

// inputRejection maps a store *InputError to the rejection of the request
// field it came from. A field the sidecar computes (now, deadline, payload
// digest) cannot be the client's fault; it is still answered as a 400
// FENCE_HEADER_INVALID (the request cannot be fenced), never as an outage.
func inputRejection(ie *store.InputError) *rejection {
	code, _ := ie.RequestCode()
	return reject(code, "the request cannot be fenced: "+ie.Field+": "+ie.Reason).with("field", ie.Field)
}

// times sets a Begin's times from start, the moment before the Begin call:
// Now; the marker's Deadline (the forward's deadline, start +
// backend.timeout, plus markerSlack to settle); and QuietAt, the forward's deadline
// plus backend.maxApplyDelay, after which no attempt of this mutation can
// take effect (docs/design.md 6.8).
func (p *Proxy) times(in *store.BeginInput, start time.Time) {
	in.Now = start
	in.Deadline = start.Add(p.cfg.Backend.Timeout + markerSlack)
	in.QuietAt = start.Add(p.cfg.Backend.Timeout + p.cfg.Backend.MaxApplyDelay)
}

// begin calls Begin, waiting while another mutation of the resource is in
// flight (up to the route's BusyWait). sendBy is the forward's absolute
// deadline, taken before the Begin that decided: start + backend.timeout.
// Nothing of the mutation may be sent after it, so that the QuietAt the
// store keeps (sendBy + backend.maxApplyDelay) holds even for a sidecar
// paused between Begin and the send.
func (p *Proxy) begin(a *attempt, in store.BeginInput) (res store.BeginResult, sendBy time.Time, err error) {
	deadline := p.now().Add(a.rt.BusyWait)
	backoff := 2 * time.Millisecond
	for {
		start := p.now()
		p.times(&in, start)
		sendBy = start.Add(p.cfg.Backend.Timeout)
		res, err = p.store.Begin(a.req.Context(), in)
		p.m.storeDur.WithLabelValues("begin").Observe(clock.Since(p.clk, start).Seconds())
		if err != nil || res.Decision != store.DecisionBusy || !p.now().Before(deadline) {
			return res, sendBy, err
		}
		// Only a waiter registers for the wake-up (a settle between Begin and
		// here is caught by the backoff timer), so decisions that do not wait
		// leave nothing behind per resource.
		signal := p.settleSignal(a.resource)
		t := p.clk.NewTimer(min(backoff, clock.Until(p.clk, deadline)))
		select {
		case <-signal:
		case <-t.C():
		case <-a.req.Context().Done():
			t.Stop()
			return res, sendBy, nil
		}
		t.Stop()
		backoff = min(backoff*2, 100*time.Millisecond)
	}
}

// decisionRejection is the rejection of a store decision: its code is
// the store's mapping (store.BeginResult.Code), with the members that
// explain it.
func decisionRejection(res store.BeginResult) *rejection {
	r := reject(res.Code(), res.Detail)
	members, known := res.Members()
	if !known {
		r.detail = fmt.Sprintf("unexpected store decision %q", res.Decision)
	}
	for k, v := range members {
		r.with(k, v)
	}
	return r
}
