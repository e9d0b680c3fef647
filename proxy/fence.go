package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate/store"
)

// fence runs steps 4-5: the store decision, forwarding, and the receipt.
func (p *Proxy) fence(w http.ResponseWriter, a *attempt) {
	g := a.grant
	in := store.BeginInput{
		Resource:      a.resource,
		Fence:         g.FenceToken,
		Root:          g.OperationRoot,
		Seq:           a.seq,
		PayloadDigest: a.payload,
		GrantDigest:   a.digest,
		Lease:         g.Lease,
		Evidence:      store.Evidence{IssuerEpoch: g.IssuerEpoch, BackendRevision: g.BackendRevision},
		RetryUnknown:  a.rt.IdempotencyKey,
	}
	res, err := p.begin(a, in)
	if err != nil {
		p.log.Error("store Begin failed; rejecting (fail closed)", zap.String("resource", a.resource), zap.Error(err))
		p.refuse(w, a, reject(CodeStoreUnavailable, "the fenced store failed; nothing was forwarded"), time.Second)
		return
	}
	switch res.Decision {
	case store.DecisionProceed:
		p.forward(w, a, res)
	case store.DecisionReplay:
		if a.shadow() { // shadow never answers from the store: the backend sees every request
			p.refuse(w, a, reject("REPLAY", "enforce mode would replay the stored response"), 0)
			return
		}
		p.m.mutations.WithLabelValues(a.rt.key, a.rt.Mode, "replayed", "").Inc()
		p.logDecision(a, "replayed", "", res.Receipt.ID)
		p.writeReceipt(w, res.Receipt, true)
	case store.DecisionBusy:
		retry := time.Second
		if res.Mutation != nil {
			retry = max(time.Until(res.Mutation.Deadline), time.Second)
		}
		p.refuse(w, a, reject(CodeResourceBusy, "another mutation of this resource is still in flight").with("retryable", true), retry)
	default:
		p.refuse(w, a, decisionRejection(res), 0)
	}
}

// begin calls Begin, waiting while another mutation of the resource is in
// flight (up to the route's BusyWait).
func (p *Proxy) begin(a *attempt, in store.BeginInput) (store.BeginResult, error) {
	deadline := time.Now().Add(a.rt.BusyWait)
	backoff := 2 * time.Millisecond
	for {
		in.Now = p.now()
		in.Deadline = in.Now.Add(p.cfg.Backend.Timeout + 5*time.Second)
		start := time.Now()
		res, err := p.store.Begin(a.req.Context(), in)
		p.m.storeDur.WithLabelValues("begin").Observe(time.Since(start).Seconds())
		if err != nil || res.Decision != store.DecisionBusy || !time.Now().Before(deadline) {
			return res, err
		}
		// Only a waiter registers for the wake-up (a settle between Begin and
		// here is caught by the backoff timer), so decisions that do not wait
		// leave nothing behind per resource.
		signal := p.settleSignal(a.resource)
		t := time.NewTimer(min(backoff, time.Until(deadline)))
		select {
		case <-signal:
		case <-t.C:
		case <-a.req.Context().Done():
			t.Stop()
			return res, nil
		}
		t.Stop()
		backoff = min(backoff*2, 100*time.Millisecond)
	}
}

// decisionRejection maps a store decision to its rejection.
func decisionRejection(res store.BeginResult) *rejection {
	r := &rejection{detail: res.Detail}
	switch res.Decision {
	case store.DecisionPaused:
		r.code = CodeResourcePaused
		if res.Record.Pause != nil && res.Record.Pause.Reason == store.PauseFenceRegression {
			r.code = CodeFenceRegression
		}
	case store.DecisionMutationUnknown:
		r.code = CodeMutationUnknown
		if res.Mutation != nil {
			r.with("operationId", res.Mutation.OperationID)
		}
	case store.DecisionSegmentConflict:
		r.code = CodeSegmentConflict
		if res.Quarantine != nil {
			r.with("quarantineId", res.Quarantine.ID)
		}
	case store.DecisionStaleOwner:
		r.code = CodeStaleOwner
		r.with("highestFence", res.Record.HighestFence)
	case store.DecisionFenceRegression:
		r.code = CodeFenceRegression
		r.with("highestFence", res.Record.HighestFence)
	case store.DecisionSegmentGap:
		r.code = CodeSegmentGap
		r.with("lastSegment", res.Record.LastSeq)
	default:
		r.code = CodeStoreUnavailable
		r.detail = fmt.Sprintf("unexpected store decision %q", res.Decision)
	}
	return r
}

// forward sends a PROCEEDed mutation and settles it in the store.
func (p *Proxy) forward(w http.ResponseWriter, a *attempt, res store.BeginResult) {
	ref := res.Mutation.Ref()
	retried := res.Mutation.Attempts > 1
	defer p.settled(a.resource)
	p.m.inFlight.Inc()
	defer p.m.inFlight.Dec()

	ctx, cancel := context.WithTimeout(context.WithoutCancel(a.req.Context()), p.cfg.Backend.Timeout)
	defer cancel()
	start := time.Now()
	resp, err := p.send(ctx, a, ref)
	if !errors.Is(err, errNotSent) {
		a.sent = true
	}
	// settle with a context of its own: the client leaving must not leave
	// the mutation unsettled.
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	if errors.Is(err, errNotSent) {
		if _, aerr := p.store.Abort(sctx, store.AbortInput{OpRef: ref, Now: p.now()}); aerr != nil {
			p.log.Error("store Abort failed; the mutation will count as unknown at its deadline", zap.Error(aerr))
		}
		p.refuse(w, a, reject(CodeBackendUnavailable, "the backend refused the connection; nothing was sent or recorded"), time.Second)
		return
	}
	if err == nil && resp.status >= 500 {
		err = fmt.Errorf("backend answered %d: the outcome is unknown", resp.status)
	}
	if err != nil {
		mu, merr := p.store.MarkUnknown(sctx, store.MarkUnknownInput{OpRef: ref, Now: p.now()})
		if merr != nil {
			p.log.Error("store MarkUnknown failed; the mutation will count as unknown at its deadline", zap.Error(merr))
		}
		p.log.Warn("mutation outcome unknown: the resource blocks new fences until reconciled",
			zap.String("resource", a.resource), zap.String("operationId", ref.OperationID()), zap.Uint64("fence", ref.Fence), zap.Error(err))
		_ = mu
		rej := reject(CodeMutationUnknown, "the backend's answer was lost after the request was sent: "+err.Error()).
			with("operationId", ref.OperationID())
		rej.status = http.StatusGatewayTimeout
		p.refuse(w, a, rej, 0)
		return
	}
	p.m.backendDur.WithLabelValues(a.rt.key).Observe(time.Since(start).Seconds())
	cstart := time.Now()
	rc, err := p.store.Commit(sctx, store.CommitInput{OpRef: ref, BackendStatus: resp.status, Response: resp.stored(a.rt.ResponseStoreLimit), Now: p.now()})
	p.m.storeDur.WithLabelValues("commit").Observe(time.Since(cstart).Seconds())
	if err != nil {
		// The backend applied it but the receipt is not stored: unknown.
		p.log.Error("store Commit failed after the backend answered: the mutation is unknown until reconciled", zap.String("resource", a.resource), zap.Error(err))
		_, _ = p.store.MarkUnknown(sctx, store.MarkUnknownInput{OpRef: ref, Now: p.now()})
		rej := reject(CodeMutationUnknown, "the backend answered but its receipt could not be stored").with("operationId", ref.OperationID())
		rej.status = http.StatusGatewayTimeout
		p.refuse(w, a, rej, 0)
		resp.close()
		return
	}
	if retried {
		p.m.reconciled.WithLabelValues("idempotent_retry", "applied").Inc()
	}
	p.m.mutations.WithLabelValues(a.rt.key, a.rt.Mode, "forwarded", "").Inc()
	p.logDecision(a, "forwarded", "", rc.ID)
	p.writeForwarded(w, resp, rc.ID)
}
