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
	"github.com/fencegate/fencegate/proxy/outbound"
	"github.com/fencegate/fencegate/store"
)

// forward runs step 5: it sends a PROCEEDed mutation (outbound.Sender) and settles
// it in the store: Commit of its answer as a receipt, MarkUnknown when the
// answer was lost after the request was sent, Abort when nothing was sent.
// sendBy is the forward's absolute deadline (begin): the send is bounded
// by it, and when it has already passed nothing is sent at all. The
// outcome's finish releases the send's context (the answer may still
// stream from it), the in-flight gauge and the resource's waiters once
// the answer is written.
func (p *Proxy) forward(a *attempt, res store.BeginResult, sendBy time.Time) (o outcome) {
	a.stage = stageBegun
	ref := res.Mutation.Ref()
	retried := res.Mutation.Attempts > 1
	p.m.inFlight.Inc()
	// The deadline is the one the quiet time was computed from, measured
	// on the sidecar's clock: what is left of it now.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(a.req.Context()), clock.Until(p.clk, sendBy))
	defer func() {
		o.finish = func() {
			cancel()
			p.m.inFlight.Dec()
			p.settled(a.resource)
		}
	}()

	start := p.now()
	var resp *outbound.Response
	var err error
	if start.Before(sendBy) {
		resp, err = p.sender.Send(a.markContext(ctx), a.req, a.body, ref, a.rt.IdempotencyKey)
	} else {
		// Paused past the deadline between Begin and here: sending now
		// could take effect after the quiet time the store keeps.
		err = errors.Join(outbound.ErrNotSent, errLate)
	}
	if !errors.Is(err, outbound.ErrNotSent) {
		a.stage = stageSent
	}
	// settle with a context of its own: the client leaving must not leave
	// the mutation unsettled.
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	if errors.Is(err, outbound.ErrNotSent) {
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
		return a.refused(reject(fencegate.CodeBackendUnavailable, detail), time.Second)
	}
	// A 5xx leaves the outcome unknown in enforce mode, unless the route's
	// backend guarantees to answer that status before any effect
	// (answeredBeforeEffect): then it is committed like a 4xx. Shadow mode
	// never changes an answer: the 5xx is what happened, so it is recorded
	// as the receipt and reaches the client unchanged, and the outcome says
	// what enforce mode would have answered.
	unknown5xx := err == nil && resp.Status >= 500 && !a.rt.answeredBeforeEffect(resp.Status)
	shadow5xx := unknown5xx && a.shadow()
	if unknown5xx && !a.shadow() {
		err = fmt.Errorf("backend answered %d: the outcome is unknown", resp.Status)
		resp.Close()
	}
	if err != nil {
		p.markUnknown(sctx, a, ref, "the backend's answer was lost after the request was sent", err)
		return a.refused(unknownRejection("the backend's answer was lost after the request was sent: "+err.Error(), ref), 0)
	}
	p.m.backendDur.WithLabelValues(a.rt.key).Observe(clock.Since(p.clk, start).Seconds())
	cin := store.CommitInput{OpRef: ref, BackendStatus: resp.Status, Response: resp.Stored(a.rt.ResponseStoreLimit), Now: p.now(), KeepReceipts: p.cfg.Retention.MaxPerResource}
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
		// (Shadow mode still answers with the backend's answer, o.resp.)
		p.log.Error("store Commit failed after the backend answered: the mutation is unknown until reconciled", zap.String("resource", a.resource), zap.Error(err))
		p.markUnknown(sctx, a, ref, "the backend answered but its receipt could not be stored", err)
		o := a.refused(unknownRejection("the backend answered but its receipt could not be stored", ref), 0)
		o.resp = resp
		return o
	}
	a.stage = stageSettled
	if retried {
		p.m.reconciled.WithLabelValues("idempotent_retry", "applied").Inc()
	}
	o = outcome{result: resultForwarded, req: a.req, a: a, resp: resp, receiptID: rc.ID}
	if shadow5xx {
		o.rej = reject(fencegate.CodeMutationUnknown, fmt.Sprintf("shadow: the backend's %d is recorded as receipt %s; enforce mode would answer MUTATION_UNKNOWN", resp.Status, rc.ID))
	}
	return o
}

// unknownRejection is the 504 MUTATION_UNKNOWN of a mutation whose outcome
// is unknown after it was sent.
func unknownRejection(detail string, ref store.OpRef) *rejection {
	rej := reject(fencegate.CodeMutationUnknown, detail).with("operationId", ref.OperationID())
	rej.status = http.StatusGatewayTimeout
	return rej
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
