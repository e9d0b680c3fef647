package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"github.com/fencegate/fencegate"
)

// DefaultProofMaxAge is the freshness a Transport in proof mode assumes
// the sidecar demands of a Fence-Status proof (the sidecar's default
// status.maxAge).
const DefaultProofMaxAge = 5 * time.Second

// TransportOption configures a Transport.
type TransportOption func(*Transport)

// WithBase sets the RoundTripper the Transport sends through (default
// http.DefaultTransport; give one with the worker's mTLS certificate).
func WithBase(rt http.RoundTripper) TransportOption {
	return func(t *Transport) { t.base = rt }
}

// WithStatusProof adds a fresh Fence-Status proof to every mutation, for
// sidecar routes in proof mode. maxAge is the route's status.maxAge (0:
// DefaultProofMaxAge). The proof of the last renewal is reused while it is
// comfortably fresher than that; otherwise the Transport reads a new one
// from the registry (Client.Status) before sending.
func WithStatusProof(maxAge time.Duration) TransportOption {
	return func(t *Transport) {
		if maxAge <= 0 {
			maxAge = DefaultProofMaxAge
		}
		t.proof, t.proofMaxAge = true, maxAge
	}
}

// WithHeader sets a header on every request the Transport sends, such as
// the identity header of a sidecar in (insecure-)header mode.
func WithHeader(name, value string) TransportOption {
	return func(t *Transport) { t.header.Set(name, value) }
}

// Transport is an http.RoundTripper that sends a worker's mutations to a
// sidecar under its Holder's grant. It keeps the http.RoundTripper
// contract: whenever it got a response, it returns it with a nil error,
// the sidecar's refusals included. For every POST, PUT, PATCH and DELETE
// it:
//
//   - refuses locally, with no network I/O at all, when the Holder does not
//     know that it holds the lease: a *StateError (ErrNotHolding), and no
//     response;
//   - adds Fence-Grant, Fence-Segment (the request's own Fence-Segment
//     header, else the one attached with ContextWithSegment, else 1) and,
//     in proof mode, a fresh Fence-Status;
//   - returns the sidecar's answer as a response; ResponseError(resp)
//     turns a refusal into a *RejectionError that matches its code's
//     sentinel (errors.Is(err, ErrStaleOwner)), and REPLAY_INCOMPLETE
//     (the segment was accepted but its answer was too large to keep)
//     into a *ReplayIncompleteError (ErrReplayIncomplete). A rejection that
//     says the grant is superseded or no longer held (STALE_OWNER,
//     GRANT_NOT_HELD, EPOCH_REVOKED, POLICY_MISMATCH) also stops the
//     Holder's effects at once, whether or not the caller reads it;
//   - turns a lost answer into an *OutcomeUnknownError (ErrOutcomeUnknown)
//     carrying the operation ID to recover with (Recover).
//
// The errors it returns, with a nil response, are exactly those of a
// mutation without an answer: refused locally before anything was sent
// (a *StateError (ErrNotHolding), ErrInvalidSegment, a proof the registry
// did not give in proof mode), never sent (ErrNotSent: no connection to
// the sidecar was made), or sent without an answer (ErrOutcomeUnknown).
//
// Other methods pass through untouched (reads are not effects). Backend
// answers, which carry Fence-Receipt, are returned as they are, whatever
// their status.
type Transport struct {
	h           *Holder
	base        http.RoundTripper
	proof       bool
	proofMaxAge time.Duration
	header      http.Header
}

// Transport returns an http.RoundTripper that sends under this Holder's grant.
func (h *Holder) Transport(opts ...TransportOption) *Transport {
	t := &Transport{h: h, base: http.DefaultTransport, header: http.Header{}}
	for _, o := range opts {
		o(t)
	}
	return t
}

// Client returns an *http.Client over the Transport that does not follow
// redirects (a redirect would carry the grant elsewhere).
func (t *Transport) Client() *http.Client {
	return &http.Client{Transport: t, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// Holder is the Holder the Transport sends for.
func (t *Transport) Holder() *Holder { return t.h }

type segmentKey struct{}

// ContextWithSegment attaches a segment number to a request's context; a
// Transport sends it as Fence-Segment unless the request sets the header
// itself. Segments of one grant must be sent 1, 2, 3, ... in order.
func ContextWithSegment(ctx context.Context, seq uint64) context.Context {
	return context.WithValue(ctx, segmentKey{}, seq)
}

// mutating is the sidecar's rule: only GET, HEAD, OPTIONS and TRACE,
// spelled exactly so, are reads; every other method is a mutation and
// carries the grant headers.
func mutating(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return false
	}
	return true
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !mutating(req.Method) {
		if len(t.header) == 0 {
			return t.base.RoundTrip(req)
		}
		out := req.Clone(req.Context())
		for k, v := range t.header {
			out.Header[k] = v
		}
		return t.base.RoundTrip(out)
	}
	seq, err := segmentOf(req)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	if err := t.h.Usable(); err != nil {
		closeBody(req)
		return nil, err
	}
	var proof string
	if t.proof {
		if proof, err = t.h.proofFor(req.Context(), t.proofMaxAge); err != nil {
			closeBody(req)
			return nil, err
		}
	}
	// The last look before anything leaves the process.
	if err := t.h.Usable(); err != nil {
		closeBody(req)
		return nil, err
	}
	opID := fencegate.OperationID(t.h.OperationRoot(), seq)
	var connected atomic.Bool
	ctx := httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected.Store(true) }})
	out := req.Clone(ctx)
	for k, v := range t.header {
		out.Header[k] = v
	}
	out.Header.Set(fencegate.HeaderGrant, t.h.Grant())
	out.Header.Set(fencegate.HeaderSegment, fencegate.FormatSegment(seq))
	out.Header.Del(fencegate.HeaderStatus)
	if proof != "" {
		out.Header.Set(fencegate.HeaderStatus, proof)
	}
	resp, err := t.base.RoundTrip(out)
	if err != nil {
		if !connected.Load() {
			return nil, fmt.Errorf("%w: %s %s: %w", ErrNotSent, req.Method, req.URL.Redacted(), err)
		}
		return nil, &OutcomeUnknownError{Method: req.Method, URL: req.URL.Redacted(), Resource: t.h.Resource(), Seq: seq, OperationID: opID, Err: err}
	}
	if resp.Request == nil {
		resp.Request = out // ResponseError reads the segment and grant sent
	}
	t.h.settle(resp, seq)
	return resp, nil
}

// settle applies what the sidecar's answer to segment seq says to the
// Holder: a receipt (an accepted segment, REPLAY_INCOMPLETE included)
// notes the segment; a rejection that says the grant is superseded or no
// longer held stops the Holder's effects at once. The response is
// returned to the caller either way (ResponseError reads its verdict).
func (h *Holder) settle(resp *http.Response, seq uint64) {
	if resp.Header.Get(fencegate.HeaderReceipt) != "" {
		h.noteSegment(seq)
		return
	}
	if rej := readRejection(resp); rej != nil {
		h.onRejection(rej)
	}
}

// onRejection stops effects at once when the sidecar's rejection says the
// grant is superseded or no longer held, and asks the registry.
func (h *Holder) onRejection(rej *RejectionError) {
	switch {
	case errors.Is(rej, ErrStaleOwner), errors.Is(rej, ErrGrantNotHeld),
		errors.Is(rej, ErrEpochRevoked), errors.Is(rej, ErrPolicyMismatch):
		h.mu.Lock()
		h.applyLocked(leaseEvent{kind: leaseRejected, cause: rej})
		h.mu.Unlock()
		h.kickKeeper()
	}
}

// proofFor returns a status proof fresh enough for a sidecar demanding
// maxAge: the last one while it is, else a new one from the registry.
func (h *Holder) proofFor(ctx context.Context, maxAge time.Duration) (string, error) {
	if p, ahead := h.freshProof(maxAge); p != "" {
		if ahead {
			h.prefetchProof()
		}
		return p, nil
	}
	sent := h.clock.Now()
	sctx, cancel := context.WithTimeout(ctx, h.cfg.attemptTimeout)
	l, err := h.c.Status(sctx, h.LeaseID())
	cancel()
	h.observe(opStatus, sent, l, err)
	if uerr := h.Usable(); uerr != nil {
		return "", uerr
	}
	if err != nil || l.Status == "" {
		return "", &StateError{State: h.State(), Cause: fmt.Errorf("client: no status proof: %v", err)}
	}
	// As fresh as a proof can be: use it even if the round trip took
	// longer than the reserve freshProof keeps.
	return l.Status, nil
}

// freshProof returns the last proof while it is usable (or ""), and
// whether it is past half of that usable window: time to fetch the next
// one ahead (prefetchProof), so no request waits for the registry while a
// usable proof is at hand.
func (h *Holder) freshProof(maxAge time.Duration) (proof string, ahead bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ls.proof == "" {
		return "", false
	}
	// The proof's iat is no earlier than proofSent, so its age is at most
	// now - proofSent and it is valid at least until proofSent + proofLife.
	// Keep a fifth in reserve for the way to the sidecar.
	limit := min(maxAge, h.ls.proofLife)
	usable := limit - limit/5
	if age := h.clock.Now().Sub(h.ls.proofSent); age < usable {
		return h.ls.proof, age >= usable/2
	}
	return "", false
}

// prefetchProof asks the registry for the next proof in the background, one
// request at a time. A HELD answer becomes the proof the next requests
// carry; any other answer (the lease expired, was revoked) is applied as
// always, so the holder learns it earlier. A failed call changes nothing:
// the current proof stays usable until its reserve, and a request that
// then needs a new one asks synchronously and sees the error itself.
func (h *Holder) prefetchProof() {
	if h.cfg.noBackground || !h.prefetching.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer h.prefetching.Store(false)
		sent := h.clock.Now()
		ctx, cancel := context.WithTimeout(context.Background(), h.cfg.attemptTimeout)
		l, err := h.c.Status(ctx, h.LeaseID())
		cancel()
		if err == nil {
			h.observe(opStatus, sent, l, nil)
		}
	}()
}
