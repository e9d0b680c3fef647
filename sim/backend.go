package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/fencegate/fencegate"
)

// backend is the legacy service behind the sidecars: it records every
// write it applies, in order, and honours Idempotency-Key (a retry of an
// applied operation is answered again, not applied twice). It is the
// sidecars' http.RoundTripper, so a forward reaches it through the
// simulated link, whose fault for the current request the round sets.
// In rounds with Effects it also answers an effect query (GET
// /v1/effects/{operationId}: 200 with the answer of an operation it
// applied, 404 for one it has not applied, which includes one it received
// and will apply later).
//
// Every write that reaches it is checked twice: when it arrives (the
// instant the sidecar accepted it: was it the store's in-flight mutation,
// was its lease held) and when it is applied (the order of fences and
// segments among what the backend holds). A late write (bfLate) is applied
// after its sidecar gave up waiting, so the two checks are apart in time.
type backend struct {
	r       *round
	applied []appliedOp
	byOp    map[string]int      // operation ID -> index in applied
	bySeg   map[receiptKey]int  // (fence, seq) -> index in applied
	refused map[string]bool     // operation IDs answered without effect
	pending map[string]struct{} // operation IDs received, applied later
	// per resource: what it has applied last
	last map[string]appliedOp
}

type appliedOp struct {
	resource string
	fence    uint64
	seq      uint64
	root     string
	op       string
	body     []byte
	grant    *grantInfo
	idem     bool // sent with Idempotency-Key (the route honours it)
}

func newBackend(r *round) *backend {
	return &backend{r: r, byOp: map[string]int{}, bySeg: map[receiptKey]int{}, refused: map[string]bool{},
		pending: map[string]struct{}{}, last: map[string]appliedOp{}}
}

// effect is what the backend's effect query answers about op now: applied
// (and the answer it gave), or not (yet).
func (b *backend) effect(op string) (applied bool, body []byte) {
	if i, ok := b.byOp[op]; ok {
		return true, b.applied[i].body
	}
	return false, nil
}

func answer(status int, body []byte) *http.Response {
	return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"text/plain"}},
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
}

var errLostAnswer = errors.New("sim: the backend's answer was lost")

// errTimeout is the sidecar's forward running out of backend.timeout.
var errTimeout = fmt.Errorf("sim: no answer from the backend within backend.timeout: %w", context.DeadlineExceeded)

func (b *backend) RoundTrip(req *http.Request) (*http.Response, error) {
	r := b.r
	if req.Method == http.MethodGet && strings.HasPrefix(req.URL.Path, effectsPath) {
		return b.effectQuery(req), nil
	}
	fault := r.cur.fault
	r.cur.fault = bfNone // a fault hits one forward only
	body, _ := io.ReadAll(req.Body)
	req.Body.Close()
	if fault == bfDial {
		r.logf("backend: connection refused")
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	}
	r.sidecars[r.cur.replica].sent++
	h := req.Header
	op := h.Get(fencegate.HeaderOperationID)
	resource := h.Get(fencegate.HeaderResource)
	fence, ferr := strconv.ParseUint(h.Get(fencegate.HeaderToken), 10, 64)
	seq, serr := strconv.ParseUint(h.Get(fencegate.HeaderSegment), 10, 64)
	root := h.Get(fencegate.HeaderRoot)
	if op == "" || resource == "" || ferr != nil || serr != nil || root == "" {
		r.violate(&r.res.Skipped, "a mutation reached the backend without the fence headers (not through the fence transaction)")
		return answer(http.StatusCreated, body), nil
	}
	b.checkFenced(resource, op, fence)
	a := appliedOp{resource: resource, fence: fence, seq: seq, root: root, op: op, body: body, grant: r.or.grants[root],
		idem: h.Get(fencegate.HeaderIdempotency) == op}
	b.checkAccepted(a)
	if r.cur.storeMid {
		r.cur.storeMid = false
		r.loseStore(r.cur.storeRestore, "while "+op+" is at the backend")
	}
	if fault == bf5xxBefore {
		b.refused[op] = true
		r.logf("backend: %s answered 500 before any effect", op)
		return answer(http.StatusInternalServerError, nil), nil
	}
	if fault == bfLate {
		// The backend holds the request; the sidecar waits out its
		// timeout (virtual time passes) and declares the outcome unknown;
		// the backend applies it later, at most maxApplyDelay after the
		// forward's deadline.
		at := r.now() + r.cur.late
		b.pending[op] = struct{}{}
		r.clk.Advance(backendTimeout)
		r.logf("backend: %s received; it will apply it at %s, after the sidecar's timeout", op, at)
		r.at(at, "late apply", func() {
			delete(b.pending, op)
			if _, dup := b.byOp[op]; dup && a.idem {
				r.logf("backend: late %s already applied by a retry under its Idempotency-Key: nothing to do", op)
				return
			}
			r.logf("backend: late %s applied now", op)
			r.res.Seen[seenLate]++
			b.apply(a)
		})
		return nil, errTimeout
	}
	if i, dup := b.byOp[op]; dup && a.idem {
		r.logf("backend: %s already applied (Idempotency-Key): answered again", op)
		return b.after(fault, answer(http.StatusCreated, b.applied[i].body))
	}
	b.apply(a)
	return b.after(fault, answer(http.StatusCreated, body))
}

// effectQuery answers GET /v1/effects/{operationId} (the operation ID is
// also in Fence-Operation-Id): what the backend has applied now.
func (b *backend) effectQuery(req *http.Request) *http.Response {
	r := b.r
	if !r.sc.Config.Effects {
		return answer(http.StatusNotImplemented, nil)
	}
	op := req.Header.Get(fencegate.HeaderOperationID)
	if op == "" {
		op, _ = url.PathUnescape(strings.TrimPrefix(req.URL.EscapedPath(), effectsPath))
	}
	applied, body := b.effect(op)
	r.logf("backend: effect query of %s: applied %v", op, applied)
	if !applied {
		return answer(http.StatusNotFound, nil)
	}
	return answer(http.StatusOK, body)
}

// after applies the post-effect faults to the answer of an applied write.
func (b *backend) after(fault backendFault, resp *http.Response) (*http.Response, error) {
	switch fault {
	case bfLostAck:
		b.r.logf("backend: answer lost")
		return nil, errLostAnswer
	case bf5xxAfter:
		b.r.logf("backend: answered 503 after applying")
		return answer(http.StatusServiceUnavailable, nil), nil
	case bfCrash:
		b.r.logf("sidecar replica %d dies before it commits", b.r.cur.replica)
		b.r.cur.crashed = true
		b.r.sidecars[b.r.cur.replica].st.dead = true
		return nil, errLostAnswer
	}
	return resp, nil
}

// checkFenced: the mutation must be the one the store marked in flight
// under its resource's highest fence (Begin ran and decided PROCEED).
func (b *backend) checkFenced(resource, op string, fence uint64) {
	r := b.r
	rec, err := r.st.Record(context.Background(), resource)
	switch {
	case err != nil:
		r.violate(&r.res.Skipped, fmt.Sprintf("%s reached the backend but the store has no record of %s", op, resource))
	case rec.InFlight == nil || rec.InFlight.OperationID != op || rec.InFlight.Fence != fence:
		r.violate(&r.res.Skipped, fmt.Sprintf("%s reached the backend but it is not the store's in-flight mutation of %s", op, resource))
	case rec.HighestFence != fence:
		r.violate(&r.res.Skipped, fmt.Sprintf("%s reached the backend under fence %d but the store's highest is %d", op, fence, rec.HighestFence))
	}
}

// checkAccepted runs the invariants of the instant the sidecar accepted a
// write (it reaches the backend then): its grant was issued, for this
// resource, and held.
func (b *backend) checkAccepted(a appliedOp) {
	r := b.r
	g := a.grant
	switch {
	case g == nil:
		r.violate(&r.res.Forged, fmt.Sprintf("%s accepted under a grant the registry never issued (operation root %s)", a.op, a.root))
	case g.resource != a.resource:
		r.violate(&r.res.Forged, fmt.Sprintf("%s accepted for %s under a grant for %s", a.op, a.resource, g.resource))
	default:
		cfg := r.sc.Config
		// Proof mode judges a proof by the sidecar's clock, which may lag
		// the registry's by up to trust.clockSkew: the window is the
		// design's on that clock. A lag beyond the tolerance earns
		// nothing more.
		off := max(cfg.Offsets[r.cur.replica], -cfg.ClockSkew)
		if why := r.or.stale(g, r.now(), r.nowMs(), off, cfg.Proof, cfg.MaxAge); why != "" {
			r.violate(&r.res.Stale, fmt.Sprintf("%s accepted under fence %d of %s: %s", a.op, g.fence, g.owner, why))
			if g.epoch < r.or.epoch {
				r.violate(&r.res.Forged, fmt.Sprintf("%s accepted under a revoked grant (epoch %d < %d)", a.op, g.epoch, r.or.epoch))
			}
		}
	}
}

// checkApplied runs the invariants of the order of what the backend
// holds, on a write about to be applied.
func (b *backend) checkApplied(a appliedOp) {
	r := b.r
	g := a.grant
	if i, ok := b.bySeg[receiptKey{a.fence, a.seq}]; ok {
		if prev := b.applied[i]; !bytes.Equal(prev.body, a.body) {
			r.violate(&r.res.Conflicts, fmt.Sprintf("%s: segment %d of fence %d applied again with another payload", a.op, a.seq, a.fence))
		} else {
			r.violate(&r.res.Gaps, fmt.Sprintf("%s: segment %d of fence %d applied twice", a.op, a.seq, a.fence))
		}
		return
	}
	last, ok := b.last[a.resource]
	switch {
	case !ok:
		if a.seq != 1 {
			r.violate(&r.res.Gaps, fmt.Sprintf("%s: first write of the resource at segment %d", a.op, a.seq))
		}
	case a.fence < last.fence:
		r.violate(&r.res.Stale, fmt.Sprintf("%s: fence %d applied after fence %d", a.op, a.fence, last.fence))
		if g != nil && last.grant != nil && later(g, last.grant) {
			r.violate(&r.res.Regressions, fmt.Sprintf("%s: fence %d issued later than fence %d, applied after it", a.op, a.fence, last.fence))
		}
	case a.fence == last.fence && a.root != last.root:
		r.violate(&r.res.Regressions, fmt.Sprintf("%s: fence %d applied under two operation roots", a.op, a.fence))
	case a.fence == last.fence && a.seq != last.seq+1:
		r.violate(&r.res.Gaps, fmt.Sprintf("%s: segment %d applied after segment %d of fence %d", a.op, a.seq, last.seq, a.fence))
	case a.fence > last.fence && a.seq != 1:
		r.violate(&r.res.Gaps, fmt.Sprintf("%s: new fence %d starts at segment %d", a.op, a.fence, a.seq))
	}
}

func (b *backend) apply(a appliedOp) {
	r := b.r
	b.checkApplied(a)
	prev, had := b.last[a.resource]
	b.byOp[a.op] = len(b.applied)
	if _, dup := b.bySeg[receiptKey{a.fence, a.seq}]; !dup {
		b.bySeg[receiptKey{a.fence, a.seq}] = len(b.applied)
	}
	b.applied = append(b.applied, a)
	b.last[a.resource] = a
	r.res.Accepted++
	r.logf("backend: applied %s fence=%d seq=%d", a.op, a.fence, a.seq)
	if had && a.fence > prev.fence && prev.grant != nil && a.grant != nil {
		r.handoff(prev.grant, a.grant)
	}
}
