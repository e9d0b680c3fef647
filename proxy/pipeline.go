package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/store"
	"github.com/fencegate/fencegate/verify"
)

// attempt is one protected mutation going through applyFencedMutation.
type attempt struct {
	rt       *route
	resource string
	req      *http.Request
	caller   string
	token    []byte
	grant    *fencegate.Grant
	digest   string
	seq      uint64
	body     []byte
	payload  string
	// cov is what reached the backend passed (coverage.go): admit sets
	// auth, fence sets fence.
	cov covMark
	// stage is how far the attempt has gone (stage.go); refuse and
	// passShadow decide on it.
	stage stage
}

func (a *attempt) shadow() bool { return a.rt.Mode == ModeShadow }

// ServeHTTP is applyFencedMutation, the only acceptance point:
// read path (readpath.go: method-override headers and protocol upgrades
// are refused; only GET, HEAD, OPTIONS and TRACE, spelled exactly so, pass
// as reads) → route → identity → verify → status (any failure here
// touches nothing in the store) → body → store Begin → forward → Commit
// (or MarkUnknown, or Abort when nothing was sent).
func (p *Proxy) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if strings.HasPrefix(req.URL.Path, selfPrefix) {
		p.serveSelf(w, req)
		return
	}
	switch p.classifyRequest(req) {
	case verdictOverride:
		p.refuseReadPath(w, req, reject(fencegate.CodeMethodOverrideRefused,
			"method-override headers (X-HTTP-Method-Override, X-HTTP-Method, X-Method-Override) are refused: send the real method"))
		return
	case verdictUpgrade:
		p.refuseReadPath(w, req, reject(fencegate.CodeUpgradeRefused,
			"protocol upgrades (Upgrade, h2c, HTTP2-Settings, the HTTP/2 preface) are refused unless an upgrades entry allows this GET"))
		return
	case verdictRead:
		if len(p.upgrades) > 0 {
			if upgrade, _, _ := upgradeSignals(req.Method, req.Header); upgrade {
				// An allowed upgrade: its tunnel is not fenced; counted.
				req = withMark(req, markUpgrade)
			}
		}
		p.pass.ServeHTTP(w, req)
		return
	}
	rt, resource, rerr := p.router.match(req)
	if rt == nil {
		variant, vres := p.caseVariant(req)
		if variant != nil && variant.Mode != ModeOff {
			// Many backends read methods case-insensitively: never let
			// "put" through where PUT is protected.
			p.refuse(w, &attempt{rt: variant, resource: vres, req: req}, reject(fencegate.CodeRouteNotProtected,
				req.Method+" differs from the protected route "+variant.key+" only in case; methods are case-sensitive: send "+variant.Method), 0)
			return
		}
		// CONNECT opens a tunnel: it is never passed unchecked.
		if p.cfg.UnmatchedMutations == "pass" && req.Method != http.MethodConnect {
			if p.refuseLookalike(w, req, nil) { // a spelling of a protected path (lenient.go)
				return
			}
			p.m.mutations.WithLabelValues("unmatched", "pass", "passed", "").Inc()
			p.pass.ServeHTTP(w, withMark(req, markUnmatched))
			return
		}
		p.m.mutations.WithLabelValues("unmatched", "reject", "rejected", string(fencegate.CodeRouteNotProtected)).Inc()
		p.writeProblem(w, reject(fencegate.CodeRouteNotProtected, req.Method+" "+req.URL.Path+" matches no protected route and unmatched mutations are rejected"), 0)
		return
	}
	if rt.Mode != ModeEnforce && p.refuseLookalike(w, req, rt) { // lenient.go
		return
	}
	if rt.Mode == ModeOff {
		p.m.mutations.WithLabelValues(rt.key, string(rt.Mode), "passed", "").Inc()
		p.pass.ServeHTTP(w, withMark(req, markOff))
		return
	}
	a := &attempt{rt: rt, resource: resource, req: req}
	if rerr != nil {
		p.refuse(w, a, reject(fencegate.CodeInvalidResource, rerr.Error()), 0)
		return
	}
	if rej := p.admit(a); rej != nil {
		p.refuse(w, a, rej, 0)
		return
	}
	p.fence(w, a)
}

// admit runs steps 2-3 (identity, grant, status) and reads the body. It
// changes nothing anywhere.
func (p *Proxy) admit(a *attempt) *rejection {
	h := a.req.Header
	tok, present, ok := single(h, fencegate.HeaderGrant)
	if !ok {
		return reject(fencegate.CodeGrantInvalid, "Fence-Grant appears more than once")
	}
	if !present || tok == "" {
		return reject(fencegate.CodeGrantRequired, "this route is protected: send Fence-Grant with a lockGrant.v1 grant")
	}
	seq, msg := parseSegment(h)
	if msg != "" {
		return reject(fencegate.CodeFenceHeaderInvalid, msg)
	}
	a.seq = seq
	proof, _, ok := single(h, fencegate.HeaderStatus)
	if !ok {
		return reject(fencegate.CodeFenceHeaderInvalid, "Fence-Status appears more than once")
	}
	caller, err := p.ident.Identify(a.req)
	if err != nil {
		return reject(fencegate.CodeIdentityRequired, err.Error())
	}
	a.caller = caller

	start := p.now()
	// One bundle for the grant and its proof. Verification goes through
	// the cache (verifycache.go): only what depends on the token's bytes
	// and the bundle is cached; binding, epoch and status below run on
	// every request.
	view := p.trust.view()
	if view.bundle == nil && view.unpinnedStore {
		// No key is trusted because the store lost its pins with its
		// data: the cause is the store, and so is the answer.
		return reject(fencegate.CodeStoreUnavailable, "no key is trusted: the fenced store holds no trust pins and is not known to be its own data set (it may have lost its data, and its pins with it); writes are refused until the loss is acknowledged at the registry, or an operator accepts keys (fencegate trust accept)").
			with("retryable", true)
	}
	a.token = []byte(tok)
	g, digest, kid, err := view.grant(a.token, p.verOpts)
	p.m.verifyDur.Observe(clock.Since(p.clk, start).Seconds())
	if err != nil {
		return fromVerify(err)
	}
	a.grant, a.digest = g, digest
	if err := verify.CheckBinding(g, a.resource, caller); err != nil {
		return fromVerify(err)
	}
	if rej := p.status.check(a.req.Context(), a.rt, view, g, digest, []byte(proof), p.clk); rej != nil {
		return p.supersededOr(a, rej)
	}
	p.trust.noteUse(a.req.Context(), kid, time.Duration(g.TTLMs)*time.Millisecond)
	a.stage = stageAdmitted
	a.cov.auth = true // signature, claims, binding and status all passed
	return p.readBody(a)
}

// supersededOr refines a "no longer held" rejection of an authentic grant:
// when the store has already accepted a higher fence for the resource, the
// caller is a stale owner and is told so (STALE_OWNER). It only reads the
// store; it never writes.
func (p *Proxy) supersededOr(a *attempt, rej *rejection) *rejection {
	if rej.code != fencegate.CodeGrantNotHeld && rej.code != fencegate.CodeStatusStale {
		return rej
	}
	rec, err := p.store.Record(a.req.Context(), a.resource)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			// The refinement is lost, the rejection stands (fail closed).
			p.log.Error("store Record failed while checking for a stale owner; keeping the original rejection",
				zap.String("resource", a.resource), zap.String("code", string(rej.code)), zap.Error(err))
		}
		return rej
	}
	if rec.HighestFence <= a.grant.FenceToken {
		return rej
	}
	return reject(fencegate.CodeStaleOwner, fmt.Sprintf("fence %d is below the highest accepted fence %d (and %s)", a.grant.FenceToken, rec.HighestFence, rej.detail)).
		with("highestFence", rec.HighestFence)
}

// readBody reads the whole body within the route's limit, checks
// Content-Digest and computes the payload digest.
func (p *Proxy) readBody(a *attempt) *rejection {
	if a.req.ContentLength > a.rt.BodyLimit {
		return reject(fencegate.CodeBodyTooLarge, "the body exceeds this route's limit").with("limit", a.rt.BodyLimit)
	}
	body, err := io.ReadAll(io.LimitReader(a.req.Body, a.rt.BodyLimit+1))
	a.stage = stageBodyRead
	a.body = body
	if err != nil {
		return reject(fencegate.CodeBodyUnreadable, "the request body could not be read: "+err.Error())
	}
	if int64(len(body)) > a.rt.BodyLimit {
		return reject(fencegate.CodeBodyTooLarge, "the body exceeds this route's limit").with("limit", a.rt.BodyLimit)
	}
	if msg := checkContentDigest(a.req.Header, body); msg != "" {
		return reject(fencegate.CodeDigestMismatch, msg)
	}
	a.payload = payloadDigest(a.req.Method, a.req.URL.RequestURI(), body)
	return nil
}

// refuse answers a rejection in enforce mode; in shadow mode it counts
// what would have been rejected and answers as if the sidecar were not
// there: the request is forwarded untouched (with the whole body, also one
// over the route's limit), or, when it was already sent and its answer lost,
// the answer is the pass-through's own for a backend that did not answer.
// The one exception is an unreadable body: it cannot be forwarded whole.
func (p *Proxy) refuse(w http.ResponseWriter, a *attempt, rej *rejection, retry time.Duration) {
	p.logDecision(a, "rejected", rej.code, rej.detail)
	if a.shadow() {
		p.m.wouldReject.WithLabelValues(a.rt.key, string(rej.code)).Inc()
		p.passShadow(w, a, rej.code, rej, retry)
		return
	}
	p.m.mutations.WithLabelValues(a.rt.key, string(a.rt.Mode), "rejected", string(rej.code)).Inc()
	if a.bodyRead() {
		_, _ = io.Copy(io.Discard, io.LimitReader(a.req.Body, 64<<10))
	}
	p.writeProblem(w, rej.with("resource", a.resource), retry)
}

// passShadow forwards a shadow-mode attempt as it came, counted as passed
// with the code enforce mode would have answered (or REPLAY).
func (p *Proxy) passShadow(w http.ResponseWriter, a *attempt, code fencegate.Code, rej *rejection, retry time.Duration) {
	p.m.mutations.WithLabelValues(a.rt.key, string(a.rt.Mode), "passed", string(code)).Inc()
	if a.sent() {
		// forward writes every answer it has; this one is lost.
		p.writeProblem(w, reject(fencegate.CodeBackendUnavailable, "the backend did not answer"), 0)
		return
	}
	if a.bodyRead() {
		// The body is in hand: the client has been told to continue.
		a.req.Header.Del("Expect")
		switch code {
		case fencegate.CodeBodyUnreadable:
			// The body is gone: enforce mode refuses, and forwarding a
			// cut body would corrupt the write.
			if rej != nil {
				p.writeProblem(w, rej, retry)
			}
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

var errNotSent = errors.New("proxy: request never sent")
