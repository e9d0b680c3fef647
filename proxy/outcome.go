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

// render answers the request by its outcome: it counts it (counts: the
// one update of fencegate_proxy_mutations_total and
// fencegate_proxy_shadow_would_reject_total), logs it (logOutcome), then
// answers it (answer). Enforce and shadow mode differ in what is counted
// and answered, never in where.
func (p *Proxy) render(w http.ResponseWriter, o outcome) {
	if labels, would, ok := o.counts(); ok {
		p.m.mutations.WithLabelValues(labels[:]...).Inc()
		if would != "" {
			p.m.wouldReject.WithLabelValues(labels[0], string(would)).Inc()
		}
	}
	p.logOutcome(o)
	p.answer(w, o)
}

// counts is how the outcome is counted: the labels of
// fencegate_proxy_mutations_total (route, mode, decision, code) and the
// code fencegate_proxy_shadow_would_reject_total counts it under ("" when
// enforce mode would not have refused it). ok is false for a read, which
// is not counted.
//
// In shadow mode a refusal is passed on as it came (decision passed, with
// the code enforce mode would have answered), and a replay is passed on
// too (code REPLAY: not a refusal); a shadow 5xx is forwarded and counted
// as the MUTATION_UNKNOWN enforce mode would have made it.
func (o outcome) counts() (labels [4]string, would fencegate.Code, ok bool) {
	label, mode := o.label, o.mode
	if o.a != nil {
		label, mode = o.a.rt.key, string(o.a.rt.Mode)
	}
	shadow := o.a != nil && o.a.shadow()
	var code fencegate.Code
	if o.rej != nil {
		code = o.rej.code
	}
	decision := ""
	switch o.result {
	case resultRead:
		return labels, "", false
	case resultPassed:
		decision = "passed"
	case resultForwarded:
		decision, would = "forwarded", code
		code = ""
	case resultReplayed:
		decision = "replayed"
		if shadow {
			decision, code = "passed", "REPLAY"
		}
	default: // resultRejected
		decision = "rejected"
		if shadow {
			decision, would = "passed", code
		}
	}
	return [4]string{label, mode, decision, string(code)}, would, true
}

// logOutcome logs the decision: a protected mutation's ("mutation",
// logDecision), or a refusal without an attempt that asked to be logged
// ("refused").
func (p *Proxy) logOutcome(o outcome) {
	a := o.a
	if a == nil {
		if o.result == resultRejected && o.refused != nil {
			p.log.Info("refused", append(o.refused, zap.String("decision", "rejected"),
				zap.String("code", string(o.rej.code)), zap.String("detail", o.rej.detail))...)
		}
		return
	}
	switch o.result {
	case resultForwarded:
		if o.rej != nil {
			p.logDecision(a, "forwarded", o.rej.code, o.rej.detail)
		} else {
			p.logDecision(a, "forwarded", "", o.receiptID)
		}
	case resultReplayed:
		if a.shadow() {
			// Enforce mode would answer from the store: not a rejection.
			p.logDecision(a, "would_replay", "", o.receipt.ID)
			return
		}
		var code fencegate.Code
		if o.receipt.Response.Truncated {
			code = fencegate.CodeReplayIncomplete // accepted, but its answer was not kept whole
		}
		p.logDecision(a, "replayed", code, o.receipt.ID)
	default: // resultRejected
		p.logDecision(a, "rejected", o.rej.code, o.rej.detail)
	}
}

// answer writes the outcome's answer. Enforce mode answers the decision;
// shadow mode answers as if the sidecar were not there: the backend sees
// every request (passShadow), and its answer is the client's.
func (p *Proxy) answer(w http.ResponseWriter, o outcome) {
	a := o.a
	switch {
	case o.result == resultRead:
		req := o.req
		if o.mark != nil {
			req = withMark(req, o.mark)
		}
		p.pass.ServeHTTP(w, req)
	case o.result == resultPassed:
		p.pass.ServeHTTP(w, withMark(o.req, o.mark))
	case a == nil: // a refusal without an attempt
		if o.rej.code == fencegate.CodeUpgradeRefused {
			// Whatever the client sends next on this connection is not the
			// request it asked to switch to.
			w.Header().Set("Connection", "close")
		}
		p.writeProblem(w, o.rej, 0)
	case o.result == resultForwarded:
		o.resp.Write(w, o.receiptID)
	case o.result == resultReplayed && a.shadow():
		// Shadow never answers from the store.
		p.passShadow(w, a, nil, 0)
	case o.result == resultReplayed:
		p.writeReceipt(w, o.receipt, true)
	case a.shadow() && o.resp != nil:
		// Shadow never changes an answer: the client gets the backend's
		// (its receipt could not be stored).
		o.resp.Write(w, "")
	case a.shadow():
		p.passShadow(w, a, o.rej, o.retry)
	default: // refused in enforce mode
		if o.resp != nil {
			o.resp.Close()
		}
		if a.bodyRead() {
			_, _ = io.Copy(io.Discard, io.LimitReader(a.req.Body, 64<<10))
		}
		p.writeProblem(w, o.rej.with("resource", a.resource), o.retry)
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
		zap.String("identity", a.caller),
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
