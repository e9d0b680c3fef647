package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/store"
)

// fence runs steps 4-5: the store decision, forwarding, and the receipt.
func (p *Proxy) fence(w http.ResponseWriter, a *attempt) {
	g := a.grant
	// The evidence carries the grant's issuer lineage ("" for a registry
	// before lineages): a lower fence of a lineage the record never saw
	// superseded is a registry that did not continue above the highest
	// fence (FENCE_REGRESSION and a pause, whatever retention deleted).
	in := store.BeginInput{
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
	if rej := p.checkBegin(a, in); rej != nil {
		p.refuse(w, a, rej, 0)
		return
	}
	res, sendBy, err := p.begin(a, in)
	if ie := (*store.InputError)(nil); errors.As(err, &ie) {
		// checkBegin let through an input the store refuses: a sidecar bug,
		// and still bad input, not an outage. Nothing was read or written.
		p.log.Error("BUG: the store refused a Begin input the sidecar had validated; rejecting as bad input",
			zap.String("resource", a.resource), zap.Error(err))
		p.refuse(w, a, inputRejection(ie), 0)
		return
	}
	if err != nil {
		p.log.Error("store Begin failed; rejecting (fail closed)", zap.String("resource", a.resource), zap.Error(err))
		p.refuse(w, a, reject(fencegate.CodeStoreUnavailable, "the fenced store failed; nothing was forwarded"), time.Second)
		return
	}
	switch res.Decision {
	case store.DecisionProceed:
		a.cov.fence = true // Begin PROCEEDed for this request's (fence, seq)
		p.forward(w, a, res, sendBy)
	case store.DecisionReplay:
		if a.shadow() { // shadow never answers from the store: the backend sees every request
			// Enforce mode would answer from the store: not a rejection.
			p.logDecision(a, "would_replay", "", res.Receipt.ID)
			p.passShadow(w, a, "REPLAY", nil, 0)
			return
		}
		p.m.mutations.WithLabelValues(a.rt.key, string(a.rt.Mode), "replayed", "").Inc()
		var code fencegate.Code
		if res.Receipt.Response.Truncated {
			code = fencegate.CodeReplayIncomplete // accepted, but its answer was not kept whole
		}
		p.logDecision(a, "replayed", code, res.Receipt.ID)
		p.writeReceipt(w, res.Receipt, true)
	case store.DecisionBusy:
		retry := time.Second
		if res.Mutation != nil {
			retry = max(clock.Until(p.clk, res.Mutation.Deadline), time.Second)
		}
		p.refuse(w, a, reject(res.Code(), "another mutation of this resource is still in flight").with("retryable", true), retry)
	default:
		p.refuse(w, a, decisionRejection(res), 0)
	}
}

// checkBegin validates what fence hands the store with the store's own rules
// (store.BeginInput.Validate: segment in 1..fencegate.MaxSeq, resource, root and
// lease within fencegate.MaxResourceLen, fencegate.MaxRootLen and store.MaxLeaseLen, no control
// characters, ...) before Begin, so input the store would refuse is answered
// as bad input and never taken for a store outage. Now, Deadline and QuietAt
// are set as begin sets them.
func (p *Proxy) checkBegin(a *attempt, in store.BeginInput) *rejection {
	p.times(&in, p.now())
	var ie *store.InputError
	if err := in.Validate(); errors.As(err, &ie) {
		if _, fromRequest := requestFields[ie.Field]; !fromRequest {
			p.log.Error("BUG: the sidecar formed a store input the store refuses; rejecting as bad input",
				zap.String("resource", a.resource), zap.Error(err))
		}
		return inputRejection(ie)
	} else if err != nil {
		p.log.Error("BUG: BeginInput.Validate returned an error that is not a *store.InputError", zap.Error(err))
		return reject(fencegate.CodeFenceHeaderInvalid, "the sidecar could not form a store input from this request: "+err.Error())
	}
	return nil
}

// requestFields are the BeginInput fields taken from the request or its
// grant, with the code that refuses them: the Fence-Segment header, the
// path's resource, the grant's claims (an oversized or malformed claim of
// an authentic grant is GRANT_INVALID, as an oversized grant is) and the
// caller's identity.
var requestFields = map[string]fencegate.Code{
	"seq":         fencegate.CodeFenceHeaderInvalid,
	"resource":    fencegate.CodeInvalidResource,
	"fence":       fencegate.CodeGrantInvalid,
	"root":        fencegate.CodeGrantInvalid,
	"lease":       fencegate.CodeGrantInvalid,
	"grantDigest": fencegate.CodeGrantInvalid,
	"owner":       fencegate.CodeIdentityRequired,
}

// inputRejection maps a store *InputError to the rejection of the request
// field it came from. A field the sidecar computes (now, deadline, payload
// digest) cannot be the client's fault; it is still answered as a 400
// FENCE_HEADER_INVALID (the request cannot be fenced), never as an outage.
func inputRejection(ie *store.InputError) *rejection {
	code, ok := requestFields[ie.Field]
	if !ok {
		code = fencegate.CodeFenceHeaderInvalid
	}
	return reject(code, "the request cannot be fenced: "+ie.Field+": "+ie.Reason).with("field", ie.Field)
}

// times sets a Begin's times from start, the moment before the Begin call:
// Now; the marker's Deadline (the forward's deadline, start +
// backend.timeout, plus 5 s to settle); and QuietAt, the forward's deadline
// plus backend.maxApplyDelay, after which no attempt of this mutation can
// take effect (docs/design.md 6.8).
func (p *Proxy) times(in *store.BeginInput, start time.Time) {
	in.Now = start
	in.Deadline = start.Add(p.cfg.Backend.Timeout + 5*time.Second)
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
	switch res.Decision {
	case store.DecisionMutationUnknown:
		if res.Mutation != nil {
			r.with("operationId", res.Mutation.OperationID)
		}
	case store.DecisionSegmentConflict:
		if res.Quarantine != nil {
			r.with("quarantineId", res.Quarantine.ID)
		}
	case store.DecisionStaleOwner, store.DecisionFenceRegression:
		r.with("highestFence", res.Record.HighestFence)
	case store.DecisionSegmentGap:
		r.with("lastSegment", res.Record.LastSeq)
	case store.DecisionPaused:
	default:
		r.detail = fmt.Sprintf("unexpected store decision %q", res.Decision)
	}
	return r
}

// forward sends a PROCEEDed mutation and settles it in the store. sendBy is
// the forward's absolute deadline (begin): the send is bounded by it, and
// when it has already passed nothing is sent at all.
func (p *Proxy) forward(w http.ResponseWriter, a *attempt, res store.BeginResult, sendBy time.Time) {
	a.stage = stageBegun
	ref := res.Mutation.Ref()
	retried := res.Mutation.Attempts > 1
	defer p.settled(a.resource)
	p.m.inFlight.Inc()
	defer p.m.inFlight.Dec()

	// The deadline is the one the quiet time was computed from, measured
	// on the sidecar's clock: what is left of it now.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(a.req.Context()), clock.Until(p.clk, sendBy))
	defer cancel()
	start := p.now()
	var resp *backendResponse
	var err error
	if start.Before(sendBy) {
		resp, err = p.send(ctx, a, ref)
	} else {
		// Paused past the deadline between Begin and here: sending now
		// could take effect after the quiet time the store keeps.
		err = errors.Join(errNotSent, errLate)
	}
	if !errors.Is(err, errNotSent) {
		a.stage = stageSent
	}
	// settle with a context of its own: the client leaving must not leave
	// the mutation unsettled.
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	if errors.Is(err, errNotSent) {
		// Abort withdraws the marker; the attempt stays begun (never sent).
		// A shadow pass that follows is outside the fence: not counted as
		// fenced (coverage.go).
		a.cov.fence = false
		if _, aerr := p.store.Abort(sctx, store.AbortInput{OpRef: ref, Now: p.now()}); aerr != nil {
			p.log.Error("store Abort failed; the mutation will count as unknown at its deadline", zap.Error(aerr))
		}
		detail := "the backend refused the connection; nothing was sent or recorded"
		if errors.Is(err, errLate) {
			p.log.Warn("the forward's deadline passed before the request could be sent (was the sidecar paused?); nothing was sent",
				zap.String("resource", a.resource), zap.String("operationId", ref.OperationID()))
			detail = "the sidecar could not send the request before its deadline; nothing was sent or recorded"
		}
		p.refuse(w, a, reject(fencegate.CodeBackendUnavailable, detail), time.Second)
		return
	}
	// A 5xx leaves the outcome unknown in enforce mode, unless the route's
	// backend guarantees to answer that status before any effect
	// (answeredBeforeEffect): then it is committed like a 4xx. Shadow mode
	// never changes an answer: the 5xx is what happened, so it is recorded
	// as the receipt and reaches the client unchanged, and the would-reject
	// counter says what enforce mode would have done.
	unknown5xx := err == nil && resp.status >= 500 && !a.rt.answeredBeforeEffect(resp.status)
	shadow5xx := unknown5xx && a.shadow()
	if unknown5xx && !a.shadow() {
		err = fmt.Errorf("backend answered %d: the outcome is unknown", resp.status)
		resp.close()
	}
	if err != nil {
		p.markUnknown(sctx, a, ref, "the backend's answer was lost after the request was sent", err)
		rej := reject(fencegate.CodeMutationUnknown, "the backend's answer was lost after the request was sent: "+err.Error()).
			with("operationId", ref.OperationID())
		rej.status = http.StatusGatewayTimeout
		p.refuse(w, a, rej, 0)
		return
	}
	p.m.backendDur.WithLabelValues(a.rt.key).Observe(clock.Since(p.clk, start).Seconds())
	cin := store.CommitInput{OpRef: ref, BackendStatus: resp.status, Response: resp.stored(a.rt.ResponseStoreLimit), Now: p.now()}
	if ie := (*store.InputError)(nil); errors.As(cin.Validate(), &ie) && ie.Field == "response.header" {
		// stored keeps only what the store accepts; if the store's rules
		// moved, keep the answer's status and body rather than lose it.
		p.log.Error("BUG: the stored response does not fit the store's limits; storing it without headers",
			zap.String("resource", a.resource), zap.Error(ie))
		cin.Response.Header, cin.Response.Truncated = nil, true
	}
	cstart := p.now()
	rc, err := p.store.Commit(sctx, cin)
	p.m.storeDur.WithLabelValues("commit").Observe(clock.Since(p.clk, cstart).Seconds())
	if err != nil {
		// The backend applied it but the receipt is not stored: unknown.
		p.log.Error("store Commit failed after the backend answered: the mutation is unknown until reconciled", zap.String("resource", a.resource), zap.Error(err))
		p.markUnknown(sctx, a, ref, "the backend answered but its receipt could not be stored", err)
		if a.shadow() {
			// Shadow never changes an answer: the client gets the backend's.
			p.m.wouldReject.WithLabelValues(a.rt.key, string(fencegate.CodeMutationUnknown)).Inc()
			p.m.mutations.WithLabelValues(a.rt.key, string(a.rt.Mode), "passed", string(fencegate.CodeMutationUnknown)).Inc()
			p.logDecision(a, "rejected", fencegate.CodeMutationUnknown, "the backend answered but its receipt could not be stored")
			p.writeForwarded(w, resp, "")
			return
		}
		resp.close()
		rej := reject(fencegate.CodeMutationUnknown, "the backend answered but its receipt could not be stored").with("operationId", ref.OperationID())
		rej.status = http.StatusGatewayTimeout
		p.refuse(w, a, rej, 0)
		return
	}
	a.stage = stageSettled
	if retried {
		p.m.reconciled.WithLabelValues("idempotent_retry", "applied").Inc()
	}
	p.m.mutations.WithLabelValues(a.rt.key, string(a.rt.Mode), "forwarded", "").Inc()
	if shadow5xx {
		p.m.wouldReject.WithLabelValues(a.rt.key, string(fencegate.CodeMutationUnknown)).Inc()
		p.logDecision(a, "forwarded", fencegate.CodeMutationUnknown, fmt.Sprintf("shadow: the backend's %d is recorded as receipt %s; enforce mode would answer MUTATION_UNKNOWN", resp.status, rc.ID))
	} else {
		p.logDecision(a, "forwarded", "", rc.ID)
	}
	p.writeForwarded(w, resp, rc.ID)
}

// errLate: the forward's deadline passed before the request was sent.
var errLate = errors.New("proxy: the forward's deadline passed before sending")

// markUnknown declares the mutation's outcome unknown after cause. A
// failure to do so is logged: the marker then counts as unknown at its
// deadline, so the resource stays blocked either way.
func (p *Proxy) markUnknown(ctx context.Context, a *attempt, ref store.OpRef, why string, cause error) {
	a.stage = stageSettled
	if _, err := p.store.MarkUnknown(ctx, store.MarkUnknownInput{OpRef: ref, Now: p.now()}); err != nil {
		p.log.Error("store MarkUnknown failed; the mutation will count as unknown at its deadline",
			zap.String("resource", a.resource), zap.String("operationId", ref.OperationID()), zap.Error(err))
	}
	p.log.Warn("mutation outcome unknown: the resource blocks new fences until reconciled ("+why+")",
		zap.String("resource", a.resource), zap.String("operationId", ref.OperationID()), zap.Uint64("fence", ref.Fence), zap.Error(cause))
}
