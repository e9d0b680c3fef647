package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sync"

	"github.com/fencegate/fencegate"
)

// SegmentFunc builds the request of segment seq of a long task. RunSegments
// calls it concurrently for several segments (ahead of their submission);
// it must honour ctx, which is cancelled when the run stops. The request is
// a mutation addressed to the sidecar; its Fence-Segment is set by
// RunSegments.
type SegmentFunc func(ctx context.Context, seq uint64) (*http.Request, error)

// SegmentOption configures RunSegments.
type SegmentOption func(*segmentConfig)

type segmentConfig struct {
	parallelism int
	first       uint64
	bodyLimit   int64
	recovery    bool
}

// WithParallelism sets how many segments are computed at once, ahead of
// their turn (default GOMAXPROCS). Submission is strictly in order anyway.
func WithParallelism(n int) SegmentOption {
	return func(c *segmentConfig) {
		if n > 0 {
			c.parallelism = n
		}
	}
}

// WithFirstSegment sets the first segment number (default: the Holder's
// LastSegment()+1, i.e. 1 for a fresh grant).
func WithFirstSegment(seq uint64) SegmentOption {
	return func(c *segmentConfig) { c.first = seq }
}

// WithResponseBodyLimit bounds how much of each accepted segment's
// response body the report keeps (default 64 KiB; the rest is discarded).
func WithResponseBodyLimit(n int64) SegmentOption {
	return func(c *segmentConfig) { c.bodyLimit = n }
}

// WithoutRecovery stops the run at a lost answer instead of asking the
// sidecar's receipt API whether that segment was accepted.
func WithoutRecovery() SegmentOption {
	return func(c *segmentConfig) { c.recovery = false }
}

// SegmentResult is one accepted segment.
type SegmentResult struct {
	Seq         uint64
	OperationID string
	// Receipt is the sidecar's receipt ID (Fence-Receipt).
	Receipt string
	// Replayed: the sidecar answered from the stored receipt (Fence-Replayed).
	Replayed bool
	// Recovered: the answer was lost and the receipt API showed the segment
	// accepted (StatusCode is then the receipt's backend status; no body).
	Recovered bool
	// Incomplete: a replay of a segment accepted earlier whose answer the
	// sidecar did not keep whole (REPLAY_INCOMPLETE). StatusCode is the
	// backend's status; there is no Header or Body.
	Incomplete bool
	// StatusCode, Header and Body are the backend's answer.
	StatusCode int
	Header     http.Header
	Body       []byte
}

// SegmentFailure is the segment at which a run stopped.
type SegmentFailure struct {
	Seq uint64
	// Sent: the request left the process, so it may have had an effect
	// (a rejection: none; an unknown outcome: maybe, see Err).
	Sent bool
	Err  error
}

// SegmentReport says which segments of a run were accepted, by receipt.
type SegmentReport struct {
	Resource      string
	Fence         uint64
	OperationRoot string
	// First and Last are the run's segment numbers (Last = First + n - 1).
	First, Last uint64
	// Accepted are the accepted segments, in order: First, First+1, ...
	Accepted []SegmentResult
	// Failed is where the run stopped, or nil. Segments after it were not
	// sent.
	Failed *SegmentFailure
}

// Complete reports whether every segment of the run was accepted.
func (r *SegmentReport) Complete() bool {
	return uint64(len(r.Accepted)) == r.Last-r.First+1
}

// RunSegments performs a long task as n ordered segments under the
// Transport's grant and its one operation root: segment requests are built
// concurrently by build, then submitted strictly in order First, First+1,
// ... each only after the previous one was accepted. The lease is checked
// again before every segment (and by the Transport itself), and the run
// stops at the first segment that is not accepted: STALE_OWNER (a newer
// owner raised the fence, so every later segment of this grant would fail
// too), any other rejection, the loss of ownership, a build error, or a
// backend error status (that segment is accepted and reported, the run
// still stops: ErrBackendStatus). A segment whose answer is lost is looked
// up in the sidecar's receipt API (unless WithoutRecovery) and counts as
// accepted when its receipt is there; without one the run stops at it,
// since no receipt does not prove it was not applied (the backend may still
// apply it). A segment accepted earlier whose
// replay the sidecar cannot give whole (REPLAY_INCOMPLETE) is accepted
// (SegmentResult.Incomplete) and the run goes on.
//
// The error is nil when all n segments were accepted; otherwise it is the
// cause, and the report says which segments were accepted and where the run
// stopped.
func (t *Transport) RunSegments(ctx context.Context, n int, build SegmentFunc, opts ...SegmentOption) (*SegmentReport, error) {
	cfg := segmentConfig{parallelism: runtime.GOMAXPROCS(0), bodyLimit: 64 << 10, recovery: true}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.first == 0 {
		cfg.first = t.h.LastSegment() + 1
	}
	rep := &SegmentReport{Resource: t.h.Resource(), Fence: t.h.Fence(), OperationRoot: t.h.OperationRoot(), First: cfg.first}
	if n <= 0 {
		rep.Last = cfg.first - 1
		return rep, nil
	}
	rep.Last = cfg.first + uint64(n) - 1
	if rep.Last < cfg.first || rep.Last > fencegate.MaxSeq {
		return rep, fmt.Errorf("%w: %d segments from %d go past %d", ErrInvalidSegment, n, cfg.first, uint64(fencegate.MaxSeq))
	}

	type slot struct {
		req  *http.Request
		err  error
		done chan struct{}
	}
	slots := make([]slot, n)
	for i := range slots {
		slots[i].done = make(chan struct{})
	}
	bctx, cancel := context.WithCancel(ctx)
	sem := make(chan struct{}, cfg.parallelism)
	var wg sync.WaitGroup
	launched := make(chan struct{})
	go func() {
		defer close(launched)
		for i := range slots {
			select {
			case sem <- struct{}{}:
			case <-bctx.Done():
				return
			}
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				req, err := build(bctx, cfg.first+uint64(i))
				if err == nil && req == nil {
					err = errors.New("client: segment builder returned no request")
				}
				slots[i].req, slots[i].err = req, err
				close(slots[i].done)
			}(i)
		}
	}()
	defer func() {
		cancel()
		<-launched
		wg.Wait()
		for i := range slots {
			select {
			case <-slots[i].done:
				if r := slots[i].req; r != nil && r.Body != nil {
					r.Body.Close() // unsent (sent bodies are closed already)
				}
			default:
			}
		}
	}()

	for i := range slots {
		seq := cfg.first + uint64(i)
		fail := func(sent bool, err error) (*SegmentReport, error) {
			rep.Failed = &SegmentFailure{Seq: seq, Sent: sent, Err: err}
			return rep, fmt.Errorf("client: segment %d of %d..%d: %w", seq, rep.First, rep.Last, err)
		}
		select {
		case <-slots[i].done:
		case <-ctx.Done():
			return fail(false, ctx.Err())
		}
		if err := slots[i].err; err != nil {
			return fail(false, fmt.Errorf("build: %w", err))
		}
		if err := t.h.Usable(); err != nil {
			return fail(false, err)
		}
		req := slots[i].req.WithContext(ctx)
		slots[i].req = nil // the Transport owns its body now
		req.Header.Set(fencegate.HeaderSegment, fencegate.FormatSegment(seq))
		resp, err := t.send(req)
		<-sem
		var unknown *OutcomeUnknownError
		var incomplete *ReplayIncompleteError
		switch {
		case errors.As(err, &incomplete):
			// Accepted earlier (the Transport noted the segment): only its
			// answer cannot be replayed.
			rep.Accepted = append(rep.Accepted, SegmentResult{Seq: seq, OperationID: incomplete.OperationID, Receipt: incomplete.ReceiptID,
				Replayed: true, Incomplete: true, StatusCode: incomplete.BackendStatus})
			if incomplete.BackendStatus >= 400 {
				return rep, fmt.Errorf("client: segment %d: %w: %d", seq, ErrBackendStatus, incomplete.BackendStatus)
			}
			continue
		case errors.As(err, &unknown) && cfg.recovery:
			rc, rerr := t.Recover(ctx, err)
			if rerr != nil {
				return fail(true, fmt.Errorf("%w (recovery: %v)", err, rerr))
			}
			rep.Accepted = append(rep.Accepted, SegmentResult{Seq: seq, OperationID: rc.OperationID, Receipt: rc.ID,
				Recovered: true, StatusCode: rc.BackendStatus})
			t.h.noteSegment(seq)
			if rc.BackendStatus >= 400 {
				return rep, fmt.Errorf("client: segment %d: %w: %d", seq, ErrBackendStatus, rc.BackendStatus)
			}
			continue
		case err != nil:
			sent := !errors.Is(err, ErrNotHolding) && !errors.Is(err, ErrNotSent)
			return fail(sent, err)
		}
		res := SegmentResult{Seq: seq, OperationID: fencegate.OperationID(rep.OperationRoot, seq), Receipt: resp.Header.Get(fencegate.HeaderReceipt),
			Replayed: resp.Header.Get(fencegate.HeaderReplayed) == "true", StatusCode: resp.StatusCode, Header: resp.Header}
		res.Body, err = io.ReadAll(io.LimitReader(resp.Body, cfg.bodyLimit))
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<20))
		resp.Body.Close()
		if res.Receipt == "" {
			return fail(true, fmt.Errorf("client: %d answer without %s: is the route protected?", resp.StatusCode, fencegate.HeaderReceipt))
		}
		rep.Accepted = append(rep.Accepted, res)
		if err != nil {
			return rep, fmt.Errorf("client: segment %d accepted, reading its answer: %w", seq, err)
		}
		if resp.StatusCode >= 400 {
			return rep, fmt.Errorf("client: segment %d: %w: %d", seq, ErrBackendStatus, resp.StatusCode)
		}
	}
	return rep, nil
}

// send is RoundTrip with the sidecar's verdict as the error, as
// RunSegments wants it: a refusal (ResponseError) comes back as the error,
// with no response (its body closed).
func (t *Transport) send(req *http.Request) (*http.Response, error) {
	resp, err := t.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if verr := ResponseError(resp); verr != nil {
		resp.Body.Close()
		return nil, verr
	}
	return resp, nil
}
