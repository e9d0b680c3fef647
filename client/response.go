package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/fencegate/fencegate"
)

// ErrNoResponse is ResponseError's answer to a nil response: there is no
// verdict to read (look at the request's error instead). It is never
// success.
var ErrNoResponse = errors.New("client: no response to read a verdict from (check the request's error)")

// ResponseError returns the sidecar's verdict carried by resp, the
// response to a mutation sent through a Transport (or any request sent to
// a sidecar): nil when resp is not a refusal of the sidecar's, else the
// typed error.
//
//   - nil: the backend's answer (it carries Fence-Receipt; Fence-Replayed:
//     true marks a replay of an accepted segment), whatever its status, or
//     any other answer that is not a sidecar problem (a read, an
//     unprotected route's backend problem);
//   - a *RejectionError that matches its code's sentinel
//     (errors.Is(err, ErrStaleOwner)), with the problem details, the
//     request's method and URL, the segment and the operation ID: the
//     sidecar refused and forwarded nothing (MUTATION_UNKNOWN reports an
//     earlier mutation's unknown outcome);
//   - a *ReplayIncompleteError (ErrReplayIncomplete): the segment was
//     accepted earlier, but its answer is too large to replay; do not send
//     it again;
//   - ErrNoResponse when resp is nil.
//
// resp's body stays readable (and must still be closed): ResponseError
// reads at most 64 KiB of a problem document and puts it back.
//
//	resp, err := hc.Do(req)
//	if err != nil {
//		return err // nothing sent (ErrNotHolding, ErrNotSent) or ErrOutcomeUnknown
//	}
//	defer resp.Body.Close()
//	if err := client.ResponseError(resp); err != nil {
//		return err // errors.Is(err, client.ErrStaleOwner) ...
//	}
func ResponseError(resp *http.Response) error {
	if resp == nil {
		return ErrNoResponse
	}
	if receipt := resp.Header.Get(fencegate.HeaderReceipt); receipt != "" {
		if ri := readReplayIncomplete(resp, receipt); ri != nil {
			ri.Method, ri.URL, ri.Resource, ri.Seq, ri.OperationID = sentAs(resp.Request)
			return ri
		}
		return nil
	}
	if rej := readRejection(resp); rej != nil {
		rej.Method, rej.URL, rej.Resource, rej.Seq, rej.OperationID = sentAs(resp.Request)
		return rej
	}
	return nil
}

// sentAs is what identifies the mutation req sent: its method and
// (redacted) URL, and, from its grant and segment headers, the resource,
// the segment and the operation ID (empty or 0 where req says nothing).
func sentAs(req *http.Request) (method, url, resource string, seq uint64, opID string) {
	if req == nil {
		return "", "", "", 0, ""
	}
	method = req.Method
	if req.URL != nil {
		url = req.URL.Redacted()
	}
	seq, _ = fencegate.ParseSegment(req.Header.Get(fencegate.HeaderSegment))
	if g, err := GrantClaims(req.Header.Get(fencegate.HeaderGrant)); err == nil {
		resource = g.Resource
		if seq > 0 {
			opID = fencegate.OperationID(g.OperationRoot, seq)
		}
	}
	return method, url, resource, seq, opID
}

// readRejection returns the sidecar's rejection in resp, or nil when resp
// is not one. resp's body stays readable either way.
func readRejection(resp *http.Response) *RejectionError {
	d := readProblem(resp, func(*fencegate.Problem) bool { return true })
	if d == nil {
		return nil
	}
	rej := &RejectionError{StatusCode: resp.StatusCode, Problem: d}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		rej.RetryAfter = time.Duration(s) * time.Second
	}
	return rej
}

// readReplayIncomplete returns the sidecar's REPLAY_INCOMPLETE in resp, a
// replay (Fence-Replayed: true) under receipt, or nil when resp is not
// one: any other replay is the backend's stored answer. resp's body stays
// readable either way.
func readReplayIncomplete(resp *http.Response, receipt string) *ReplayIncompleteError {
	if resp.Header.Get(fencegate.HeaderReplayed) != "true" {
		return nil
	}
	d := readProblem(resp, func(d *fencegate.Problem) bool { return d.Code == fencegate.CodeReplayIncomplete })
	if d == nil {
		return nil
	}
	ri := &ReplayIncompleteError{ReceiptID: receipt, StatusCode: resp.StatusCode, Problem: d}
	if n, ok := d.Extra["backendStatus"].(float64); ok && n >= 100 && n <= 599 && n == float64(int(n)) {
		ri.BackendStatus = int(n)
	}
	return ri
}

// problemLimit bounds the problem document readProblem reads.
const problemLimit = 64 << 10

// readProblem returns the sidecar problem document in resp (status >= 400,
// problem+json, a fencegate type and a code) when want accepts it, or nil
// (the backend's own problem, on an unprotected route or in a replay).
// Either way resp's body is handed back readable from its start: what was
// read comes first, then the rest, and closing it closes the original.
func readProblem(resp *http.Response, want func(*fencegate.Problem) bool) *fencegate.Problem {
	if resp.StatusCode < 400 || resp.Body == nil || !strings.HasPrefix(resp.Header.Get("Content-Type"), fencegate.ProblemContentType) {
		return nil
	}
	buf, err := io.ReadAll(io.LimitReader(resp.Body, problemLimit+1))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(buf), resp.Body), resp.Body}
	var d fencegate.Problem
	if err != nil || len(buf) > problemLimit || json.Unmarshal(buf, &d) != nil ||
		!strings.HasPrefix(d.Type, fencegate.ProblemTypeBase) || d.Code == "" || !want(&d) {
		return nil
	}
	if d.Status == 0 {
		d.Status = resp.StatusCode
	}
	return &d
}
