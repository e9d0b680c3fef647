package proxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/fencegate/fencegate/proxy/inbound"
)

// Coverage of protected mutations: what reached the backend, and whether
// it passed grant authentication and the fence check on the way.
//
// The count is taken where a request leaves for the backend, not inferred
// from decisions: the backend transport (p.tr) is wrapped by
// coverageTransport, and every path to the backend goes through it (the
// protected write's send, the pass-through of reads, allowed upgrades,
// unmatched mutations passed, routes in off mode and shadow passes, and the
// reconciler's effect queries). Each stage that passes records it on the
// request itself, in the covMark its attempt carries; the dispatching code
// hands the mark to the transport in the request's context (one context
// value). The transport then labels the request by what actually happened
// to it:
//
//	auth  passed   admit ran and the grant's signature, claims, binding to
//	               the resource and caller, and status all passed;
//	      skipped  otherwise: not run (mode off, unmatched, an upgrade), or
//	               run and failed (only shadow mode forwards such a request)
//	fence passed   the store's Begin answered PROCEED for this request's
//	               (fence, seq) and the in-flight marker was still held when
//	               it was sent (an Abort after a dial failure withdraws it);
//	      skipped  otherwise: not run, or not PROCEED (a shadow pass of a
//	               would-be rejection or of a replay)
//
// A read (GET, HEAD, OPTIONS, TRACE without an upgrade) is not a mutation
// and is not counted. An allowed upgrade is counted (mode upgrade): what
// flows in its tunnel is not fenced. A mutation reaching the transport
// without a mark came by a path that skipped the pipeline's dispatch: it is
// counted as mode unmarked and logged as a bug, as is any enforce-mode
// request that did not pass both checks. A request is counted once the
// transport returns, unless it failed to dial (then provably nothing was
// sent, as send's errNotSent says): an answer, a timeout or a connection
// cut after sending all count, since the backend may have received it.

// The mode label values of fencegate_proxy_backend_mutations_total and the
// keys of Coverage.Modes.
const (
	CoverageEnforce   = "enforce"   // a route in enforce mode
	CoverageShadow    = "shadow"    // a route in shadow mode
	CoverageOff       = "off"       // a route in off mode
	CoverageUnmatched = "unmatched" // no route; passed by unmatchedMutations: pass
	CoverageUpgrade   = "upgrade"   // a GET an upgrades entry allows to open a tunnel
	CoverageUnmarked  = "unmarked"  // reached the backend without the pipeline's mark: a bug
)

// covMode is a mode label as an index.
type covMode uint8

const (
	covEnforce covMode = iota
	covShadow
	covOff
	covUnmatched
	covUpgrade
	covUnmarked
	numCovModes
)

var covModeNames = [numCovModes]string{CoverageEnforce, CoverageShadow, CoverageOff, CoverageUnmatched, CoverageUpgrade, CoverageUnmarked}

// covMark is what the pipeline records on a request bound for the backend:
// its mode, and which checks passed. auth is set by admit only, fence by
// fence (PROCEED) and withdrawn by forward (Abort) only.
type covMark struct {
	mode  covMode
	auth  bool
	fence bool
}

// The marks of requests no stage checks; read-only.
var (
	markOff       = &covMark{mode: covOff}
	markUnmatched = &covMark{mode: covUnmatched}
	markUpgrade   = &covMark{mode: covUpgrade}
	markUnmarked  = &covMark{mode: covUnmarked}
)

// covKey is the context key of a request's *covMark.
type covKey struct{}

// withMark returns req carrying m for the backend transport.
func withMark(req *http.Request, m *covMark) *http.Request {
	return req.WithContext(context.WithValue(req.Context(), covKey{}, m))
}

// coverage holds the counts, by mode, auth passed and fence passed.
type coverage struct {
	n   [numCovModes][2][2]atomic.Uint64
	ctr [numCovModes][2][2]prometheus.Counter
	log *zap.Logger
}

var passedLabel = [2]string{"skipped", "passed"}

// newCoverage creates every label combination of vec at zero, so alerts
// can rely on each series existing.
func newCoverage(vec *prometheus.CounterVec, log *zap.Logger) *coverage {
	c := &coverage{log: log}
	for m := range numCovModes {
		for auth := range 2 {
			for fence := range 2 {
				c.ctr[m][auth][fence] = vec.WithLabelValues(covModeNames[m], passedLabel[auth], passedLabel[fence])
			}
		}
	}
	return c
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// counted returns the mark r is counted by, or nil for a request that is
// not counted: a read, or the reconciler's effect query.
func counted(r *http.Request) *covMark {
	if m, _ := r.Context().Value(covKey{}).(*covMark); m != nil {
		return m
	}
	if inbound.ReadMethod(r.Method) {
		return nil
	}
	return markUnmarked
}

// note counts r, under its mark m, a request that reached, or may have
// reached, the backend.
func (c *coverage) note(r *http.Request, m *covMark) {
	mode, auth, fence := m.mode, m.auth, m.fence
	c.n[mode][b2i(auth)][b2i(fence)].Add(1)
	c.ctr[mode][b2i(auth)][b2i(fence)].Inc()
	if mode == covUnmarked || (mode == covEnforce && !(auth && fence)) {
		c.log.Error("BUG: a mutation reached the backend without passing grant authentication and the fence check",
			zap.String("mode", covModeNames[mode]), zap.String("auth", passedLabel[b2i(auth)]), zap.String("fence", passedLabel[b2i(fence)]),
			zap.String("method", r.Method), zap.String("path", r.URL.Path))
	}
}

// coverageTransport counts every request it forwards that may have reached
// the backend (coverage.note).
type coverageTransport struct {
	next http.RoundTripper
	cov  *coverage
}

// RoundTrip sends r, then counts it unless it provably never left: its
// dial failed and no connection was ever had (a transport may retry a
// request it wrote on a reused connection, then fail to dial; send judges
// errNotSent by the same rule). Reads are sent as they are, at no cost.
func (t *coverageTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	m := counted(r)
	if m == nil {
		return t.next.RoundTrip(r)
	}
	var connected bool
	traced := r.WithContext(httptrace.WithClientTrace(r.Context(), &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected = true }}))
	resp, err := t.next.RoundTrip(traced)
	if resp != nil {
		resp.Request = r // the caller's request, not the traced copy
	}
	var op *net.OpError
	if err == nil || connected || !errors.As(err, &op) || op.Op != "dial" {
		t.cov.note(r, m)
	}
	return resp, err
}

// Coverage is what a sidecar has handed to its backend since it started,
// counted as fencegate_proxy_backend_mutations_total counts it (see the
// package's coverage.go). Each count is read atomically, the set is not a
// single snapshot under concurrent traffic.
type Coverage struct {
	// Forwarded is every mutation handed to the backend, in all modes.
	Forwarded uint64
	// Covered is those that passed both grant authentication and the
	// fence check.
	Covered uint64
	// Modes holds the counts by mode label (CoverageEnforce, ...); every
	// mode is present.
	Modes map[string]ModeCoverage
}

// ModeCoverage is the coverage of one mode.
type ModeCoverage struct {
	Forwarded   uint64 // handed to the backend
	AuthPassed  uint64 // of which grant authentication passed
	FencePassed uint64 // of which the fence check passed
	Covered     uint64 // of which both passed
}

// Coverage returns the counts of mutations handed to the backend.
func (p *Proxy) Coverage() Coverage {
	out := Coverage{Modes: make(map[string]ModeCoverage, numCovModes)}
	for m := range numCovModes {
		var mc ModeCoverage
		for auth := range 2 {
			for fence := range 2 {
				n := p.cov.n[m][auth][fence].Load()
				mc.Forwarded += n
				if auth == 1 {
					mc.AuthPassed += n
				}
				if fence == 1 {
					mc.FencePassed += n
				}
				if auth == 1 && fence == 1 {
					mc.Covered += n
				}
			}
		}
		out.Modes[covModeNames[m]] = mc
		out.Forwarded += mc.Forwarded
		out.Covered += mc.Covered
	}
	return out
}
