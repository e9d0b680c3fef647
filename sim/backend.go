package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"

	"github.com/fencegate/fencegate"
)

// backend is the legacy service behind the sidecars: it records every
// write it applies, in order, and honours Idempotency-Key (a retry of an
// applied operation is answered again, not applied twice). It is the
// sidecars' http.RoundTripper, so a forward reaches it through the
// simulated link, whose fault for the current request the round sets.
//
// Every write that reaches it is checked against the oracle and the store
// before it is applied: this is where an accepted stale, forged, gapped or
// regressed write, or one that skipped the fence transaction, is caught.
type backend struct {
	r       *round
	applied []appliedOp
	byOp    map[string]int  // operation ID -> index in applied
	refused map[string]bool // operation IDs answered without effect
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
}

func newBackend(r *round) *backend {
	return &backend{r: r, byOp: map[string]int{}, refused: map[string]bool{}, last: map[string]appliedOp{}}
}

// truth is what an operator learns from the backend about op.
func (b *backend) truth(op string) (applied bool, body []byte) {
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

func (b *backend) RoundTrip(req *http.Request) (*http.Response, error) {
	r := b.r
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
	if fault == bf5xxBefore {
		b.refused[op] = true
		r.logf("backend: %s answered 500 before any effect", op)
		return answer(http.StatusInternalServerError, nil), nil
	}
	if i, dup := b.byOp[op]; dup && h.Get(fencegate.HeaderIdempotency) == op {
		r.logf("backend: %s already applied (Idempotency-Key): answered again", op)
		return b.after(fault, answer(http.StatusCreated, b.applied[i].body))
	}
	a := appliedOp{resource: resource, fence: fence, seq: seq, root: root, op: op, body: body, grant: r.or.grants[root]}
	b.check(a)
	b.apply(a)
	return b.after(fault, answer(http.StatusCreated, body))
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

// check runs the invariants on a write about to be applied.
func (b *backend) check(a appliedOp) {
	r := b.r
	g := a.grant
	switch {
	case g == nil:
		r.violate(&r.res.Forged, fmt.Sprintf("%s applied under a grant the registry never issued (operation root %s)", a.op, a.root))
	case g.resource != a.resource:
		r.violate(&r.res.Forged, fmt.Sprintf("%s applied to %s under a grant for %s", a.op, a.resource, g.resource))
	default:
		if why := r.or.stale(g, r.now(), r.nowMs(), r.sc.Config.Proof, r.sc.Config.MaxAge); why != "" {
			r.violate(&r.res.Stale, fmt.Sprintf("%s applied under fence %d of %s: %s", a.op, g.fence, g.owner, why))
			if g.epoch < r.or.epoch {
				r.violate(&r.res.Forged, fmt.Sprintf("%s applied under a revoked grant (epoch %d < %d)", a.op, g.epoch, r.or.epoch))
			}
		}
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
	prev, had := b.last[a.resource]
	b.byOp[a.op] = len(b.applied)
	b.applied = append(b.applied, a)
	b.last[a.resource] = a
	r.res.Accepted++
	r.logf("backend: applied %s fence=%d seq=%d", a.op, a.fence, a.seq)
	if had && a.fence > prev.fence && prev.grant != nil && a.grant != nil {
		if end, ok := r.or.endOf(prev.grant, r.nowMs(), r.startMs()); ok && end <= r.now() {
			r.res.Handoffs = append(r.res.Handoffs, r.now()-end)
		}
	}
}
