package proxy

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/proxy/inbound"
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
	grant    *verify.Grant
	digest   string
	seq      uint64
	body     []byte
	payload  string
	// cov is what reached the backend passed (coverage.go): admit sets
	// auth, fence sets fence.
	cov covMark
	// stage is how far the attempt has gone (stage.go); render and
	// passShadow decide on it.
	stage stage
}

func (a *attempt) shadow() bool { return a.rt.Mode == ModeShadow }

// admit runs steps 2-3 (identity, grant, status) and reads the body. It
// changes nothing anywhere.
func (p *Proxy) admit(a *attempt) *rejection {
	h := a.req.Header
	tok, present, ok := inbound.Single(h, fencegate.HeaderGrant)
	if !ok {
		return reject(fencegate.CodeGrantInvalid, "Fence-Grant appears more than once")
	}
	if !present || tok == "" {
		return reject(fencegate.CodeGrantRequired, "this route is protected: send Fence-Grant with a lockGrant.v1 grant")
	}
	seq, msg := inbound.ParseSegment(h)
	if msg != "" {
		return reject(fencegate.CodeFenceHeaderInvalid, msg)
	}
	a.seq = seq
	proof, _, ok := inbound.Single(h, fencegate.HeaderStatus)
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
	if msg := inbound.CheckContentDigest(a.req.Header, body); msg != "" {
		return reject(fencegate.CodeDigestMismatch, msg)
	}
	a.payload = inbound.PayloadDigest(a.req.Method, a.req.URL.RequestURI(), body)
	return nil
}
