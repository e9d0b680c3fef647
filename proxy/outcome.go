package proxy

import (
	"bytes"
	"io"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/proxy/outbound"
	"github.com/fencegate/fencegate/store"
)

// result is what happened to a request, as the decision label of
// fencegate_proxy_mutations_total says it (resultRead is not counted).
type result uint8

const (
	// resultRead: a read, or an allowed upgrade, passed through.
	resultRead result = iota
	// resultPassed: a mutation passed unchecked (no route and
	// unmatchedMutations: pass, or a route in off).
	resultPassed
	// resultRejected: refused; in shadow mode what enforce would refuse,
	// passed on as it came.
	resultRejected
	// resultReplayed: answered from its receipt (in shadow mode: passed,
	// counted as REPLAY).
	resultReplayed
	// resultForwarded: forwarded, and its answer committed as a receipt.
	resultForwarded
)

// outcome is the one value a request's decision produces (decide), and
// render turns it into the answer, the log line and the counts, once, for
// enforce and shadow mode alike.
type outcome struct {
	result result
	req    *http.Request
	// a is the protected mutation's attempt; nil for a request no
	// protected route's pipeline ran for (a read, a read-path refusal, an
	// unmatched or off mutation, a look-alike of an enforced route).
	a *attempt
	// label and mode are the route and mode labels of a request without
	// an attempt; mark is what its pass-through carries (coverage.go).
	label, mode string
	mark        *covMark
	// refused is the logged fields of a refusal without an attempt
	// ("refused"); nil: not logged.
	refused []zap.Field

	// rej: for resultRejected, the refusal; for resultForwarded, what
	// enforce mode would have answered instead (a shadow route's 5xx), or
	// nil.
	rej   *rejection
	retry time.Duration
	// resp is the backend's answer, when there is one: a forwarded
	// mutation's, or a shadow mutation's whose receipt could not be stored.
	resp *outbound.Response
	// receipt is the stored receipt a replay answers from.
	receipt *store.Receipt
	// receiptID is the receipt a forwarded answer was committed as.
	receiptID string
	// finish releases what the forward held for the answer (its context,
	// the in-flight gauge, the resource's waiters); nil when nothing.
	finish func()
}

// refused is the outcome of an attempt refused with rej.
func (a *attempt) refused(rej *rejection, retry time.Duration) outcome {
	return outcome{result: resultRejected, req: a.req, a: a, rej: rej, retry: retry}
}

// passed is a mutation passed unchecked, counted under label and mode.
func passed(req *http.Request, label, mode string, mark *covMark) outcome {
	return outcome{result: resultPassed, req: req, label: label, mode: mode, mark: mark}
}

// rejected is a refusal without an attempt, counted under label and mode
// and logged with fields (none: not logged).
func rejected(req *http.Request, label, mode string, rej *rejection, fields ...zap.Field) outcome {
	return outcome{result: resultRejected, req: req, label: label, mode: mode, rej: rej, refused: fields}
}

// release runs finish, if any.
func (o outcome) release() {
	if o.finish != nil {
		o.finish()
	}
}

// render answers the request by its outcome. It is the only place that
// counts fencegate_proxy_mutations_total and
// fencegate_proxy_shadow_would_reject_total, logs a decision, and tells
// enforce mode (answer the decision) from shadow mode (count what enforce
// would have answered, and answer as if the sidecar were not there).
func (p *Proxy) render(w http.ResponseWriter, o outcome) {
	if o.a == nil {
		p.renderUnrouted(w, o)
		return
	}
	a := o.a
	key, mode := a.rt.key, string(a.rt.Mode)
	switch o.result {
	case resultForwarded:
		p.m.mutations.WithLabelValues(key, mode, "forwarded", "").Inc()
		if o.rej != nil {
			p.m.wouldReject.WithLabelValues(key, string(o.rej.code)).Inc()
			p.logDecision(a, "forwarded", o.rej.code, o.rej.detail)
		} else {
			p.logDecision(a, "forwarded", "", o.receiptID)
		}
		o.resp.Write(w, o.receiptID)
	case resultReplayed:
		if a.shadow() {
			// Enforce mode would answer from the store: not a rejection.
			// Shadow never answers from the store: the backend sees every
			// request.
			p.logDecision(a, "would_replay", "", o.receipt.ID)
			p.m.mutations.WithLabelValues(key, mode, "passed", "REPLAY").Inc()
			p.passShadow(w, a, nil, 0)
			return
		}
		p.m.mutations.WithLabelValues(key, mode, "replayed", "").Inc()
		var code fencegate.Code
		if o.receipt.Response.Truncated {
			code = fencegate.CodeReplayIncomplete // accepted, but its answer was not kept whole
		}
		p.logDecision(a, "replayed", code, o.receipt.ID)
		p.writeReceipt(w, o.receipt, true)
	default: // resultRejected
		rej := o.rej
		p.logDecision(a, "rejected", rej.code, rej.detail)
		if a.shadow() {
			p.m.wouldReject.WithLabelValues(key, string(rej.code)).Inc()
			p.m.mutations.WithLabelValues(key, mode, "passed", string(rej.code)).Inc()
			if o.resp != nil {
				// Shadow never changes an answer: the client gets the
				// backend's (its receipt could not be stored).
				o.resp.Write(w, "")
				return
			}
			p.passShadow(w, a, rej, o.retry)
			return
		}
		p.m.mutations.WithLabelValues(key, mode, "rejected", string(rej.code)).Inc()
		if o.resp != nil {
			o.resp.Close()
		}
		if a.bodyRead() {
			_, _ = io.Copy(io.Discard, io.LimitReader(a.req.Body, 64<<10))
		}
		p.writeProblem(w, rej.with("resource", a.resource), o.retry)
	}
}

// renderUnrouted answers a request no protected route's pipeline ran for.
func (p *Proxy) renderUnrouted(w http.ResponseWriter, o outcome) {
	req := o.req
	switch o.result {
	case resultRead:
		if o.mark != nil {
			req = withMark(req, o.mark)
		}
		p.pass.ServeHTTP(w, req)
	case resultPassed:
		p.m.mutations.WithLabelValues(o.label, o.mode, "passed", "").Inc()
		p.pass.ServeHTTP(w, withMark(req, o.mark))
	default: // resultRejected
		rej := o.rej
		p.m.mutations.WithLabelValues(o.label, o.mode, "rejected", string(rej.code)).Inc()
		if o.refused != nil {
			p.log.Info("refused", append(o.refused,
				zap.String("decision", "rejected"), zap.String("code", string(rej.code)), zap.String("detail", rej.detail))...)
		}
		if rej.code == fencegate.CodeUpgradeRefused {
			// Whatever the client sends next on this connection is not the
			// request it asked to switch to.
			w.Header().Set("Connection", "close")
		}
		p.writeProblem(w, rej, 0)
	}
}

// passShadow forwards a shadow-mode attempt as it came (rej is what enforce
// mode would have refused it with; nil for a replay): with the whole body,
// also one over the route's limit, or, when it was already sent and its
// answer lost, the pass-through's own answer for a backend that did not
// answer. The one exception is an unreadable body: it cannot be forwarded
// whole, and is refused as enforce mode refuses it.
func (p *Proxy) passShadow(w http.ResponseWriter, a *attempt, rej *rejection, retry time.Duration) {
	if a.sent() {
		// forward writes every answer it has; this one is lost.
		p.writeProblem(w, reject(fencegate.CodeBackendUnavailable, "the backend did not answer"), 0)
		return
	}
	if a.bodyRead() {
		// The body is in hand: the client has been told to continue.
		a.req.Header.Del("Expect")
		var code fencegate.Code
		if rej != nil {
			code = rej.code
		}
		switch code {
		case fencegate.CodeBodyUnreadable:
			// The body is gone: enforce mode refuses, and forwarding a
			// cut body would corrupt the write.
			p.writeProblem(w, rej, retry)
			return
		case fencegate.CodeBodyTooLarge:
			// What was read, then the rest of the stream: the whole body.
			a.req.Body = io.NopCloser(io.MultiReader(bytes.NewReader(a.body), a.req.Body))
		default:
			a.req.Body = io.NopCloser(bytes.NewReader(a.body))
			a.req.ContentLength = int64(len(a.body))
		}
	}
	p.pass.ServeHTTP(w, a.req.WithContext(a.markContext(a.req.Context())))
}

// logDecision logs the decision on a protected mutation.
func (p *Proxy) logDecision(a *attempt, decision string, code fencegate.Code, detail string) {
	fields := []zap.Field{
		zap.String("route", a.rt.key), zap.String("mode", string(a.rt.Mode)), zap.String("resource", a.resource),
		zap.String("decision", decision), zap.String("code", string(code)), zap.Uint64("seq", a.seq),
		zap.String("caller", a.caller),
	}
	if a.grant != nil {
		fields = append(fields, zap.Uint64("fence", a.grant.FenceToken), zap.String("grantDigest", a.digest))
	}
	if detail != "" {
		fields = append(fields, zap.String("detail", detail))
	}
	if decision == "rejected" && a.shadow() {
		fields = append(fields, zap.Bool("wouldReject", true))
	}
	p.log.Info("mutation", fields...)
}
