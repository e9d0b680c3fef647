package proxy

import (
	"context"
	"net/http"

	"github.com/fencegate/fencegate"
)

// attempt is one protected mutation going through applyFencedMutation.
type attempt struct {
	rt       *route
	resource string
	req      *http.Request
	caller   string
	grant    *fencegate.Grant
	digest   string
	seq      uint64
	body     []byte
	payload  string
	// cov is what reached the backend passed (coverage.go): admit sets
	// auth, fence sets fence.
	cov covMark
	// stage is how far the attempt has gone (below); render and
	// passShadow decide on it.
	stage stage
}

// shadow reports whether the attempt's route is in shadow mode.
func (a *attempt) shadow() bool { return a.rt.Mode == ModeShadow }

// markContext returns ctx carrying the attempt's coverage mark (coverage.go)
// for the backend transport, its mode set from the route.
func (a *attempt) markContext(ctx context.Context) context.Context {
	a.cov.mode = covEnforce
	if a.shadow() {
		a.cov.mode = covShadow
	}
	return context.WithValue(ctx, covKey{}, &a.cov)
}

// stage is how far a protected mutation (an attempt) has gone through the
// pipeline. Stages only move forward, each set at one place:
//
//	routed    decide      the request matched a route (the zero value);
//	                      nothing read, nothing written
//	admitted  admit       identity, grant and status are established;
//	                      still nothing read or written
//	bodyRead  readBody    the body was read from the client, whole or in
//	                      part (an unreadable or oversized body is in this
//	                      stage too: what was read is gone from the stream)
//	begun     forward     the store decided PROCEED and holds an in-flight
//	                      marker (an Abort after a send that never left
//	                      withdraws it; the attempt stays begun)
//	sent      forward     the request reached, or may have reached, the
//	                      backend: it is never forwarded a second time
//	settled   markUnknown the store holds the outcome: a receipt
//	          / forward   (Commit) or an unknown mutation (MarkUnknown)
//
// render and passShadow decide on it: a body in hand must be drained or
// handed on (bodyRead), a request already sent must not be sent again
// (sent).
type stage uint8

// The stages, in order.
const (
	stageRouted stage = iota
	stageAdmitted
	stageBodyRead
	stageBegun
	stageSent
	stageSettled
)

// bodyRead reports whether the body was (at least partly) read from the client.
func (a *attempt) bodyRead() bool { return a.stage >= stageBodyRead }

// sent reports whether the request reached, or may have reached, the backend.
func (a *attempt) sent() bool { return a.stage >= stageSent }
