package proxy

import (
	"errors"
	"fmt"
	"io"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/proxy/inbound"
	"github.com/fencegate/fencegate/store"
)

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
	// Identity, grant, binding and status (authn): one trust
	// bundle for the grant and its proof.
	r, ref := p.auth.Check(a.req, a.resource, []byte(tok), []byte(proof), a.rt.status)
	a.caller, a.grant, a.digest = r.Caller, r.Grant, r.Digest
	if ref != nil {
		rej := reject(ref.Code, ref.Detail)
		if ref.Retryable {
			rej.with("retryable", true)
		}
		if a.grant == nil {
			return rej
		}
		return p.supersededOr(a, rej)
	}
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
