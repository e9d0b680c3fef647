package pgfence

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/proxy/inbound"
	"github.com/fencegate/fencegate/proxy/outbound"
	"github.com/fencegate/fencegate/store"
)

// HandlerFunc is a fenced write's handler. It runs in tx once the fence
// accepted the request, with the resource's record locked until tx ends;
// what it writes to w is held back and sent after tx commits (and stored
// as the receipt's response, which a replay answers). It returns nil to
// commit; an error rolls tx back and is answered as a problem (the
// error's *fencegate.Problem, or 500 INTERNAL).
type HandlerFunc func(w http.ResponseWriter, r *http.Request, tx pgx.Tx) error

// ResourceFunc maps a request to its canonical resource ID (from its
// path, say); an error is answered 400 INVALID_RESOURCE.
type ResourceFunc func(*http.Request) (string, error)

// Handler fences h: it reads the request contract (Fence-Grant,
// Fence-Segment, Fence-Status, Content-Digest), establishes the caller's
// identity (WithIdentity, required), reads the body (WithBodyLimit), and
// runs Apply and h in one transaction of db (Fence.RunTx, at opts), so
// that h's writes, the record and the receipt commit together. A refusal
// is answered as the sidecar answers it (problem+json, Retry-After where
// it applies), a replay from its receipt with Fence-Replayed: true, an
// accepted write with h's answer and Fence-Receipt. Wrap only the
// service's mutating routes: every request Handler sees is a fenced
// write.
func (f *Fence) Handler(db Beginner, opts pgx.TxOptions, resource ResourceFunc, h HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, p := f.readRequest(r, resource)
		if p != nil {
			f.m.decisions.WithLabelValues(string(p.Code)).Inc()
			fencegate.WriteProblem(w, p, 0)
			return
		}
		var rec *recorder
		var rc store.Receipt
		err := f.RunTx(r.Context(), db, opts, func(tx pgx.Tx) error {
			rec = newRecorder()
			var err error
			rc, err = f.serveIn(tx, r, req, rec, h)
			return err
		})
		f.m.decisions.WithLabelValues(outcomeAfter(err)).Inc()
		f.answer(w, r, req, rec, rc, err)
	})
}

// serveIn is one run of the transaction: the fence's decision (written
// with h's answer once h returns nil), then h.
func (f *Fence) serveIn(tx pgx.Tx, r *http.Request, req Request, rec *recorder, h HandlerFunc) (store.Receipt, error) {
	ctx := r.Context()
	in, res, err := f.previewIn(ctx, tx, req)
	if err != nil || res.Decision != store.DecisionProceed {
		return store.Receipt{}, err
	}
	if err := h(rec, r, tx); err != nil {
		return store.Receipt{}, &handlerError{err: err}
	}
	in.Response = (&outbound.Response{Status: rec.status, Header: rec.header, Body: rec.body.Bytes()}).Stored(store.BodyLimit(f.st.TxOptions().MaxResponseBody))
	key := store.ReceiptKey{Resource: in.Resource, Fence: in.Fence, Seq: in.Seq}
	t, err := f.st.TxFor(ctx, tx, in.Resource, &key, "")
	if err != nil {
		return store.Receipt{}, failure(err)
	}
	res, _, err = store.Accept(t, in, f.st.TxOptions())
	if err == nil {
		err = t.Release()
	}
	switch {
	case err != nil:
		return store.Receipt{}, failure(err)
	case res.Decision != store.DecisionProceed:
		// The record is locked since the preview: it cannot have moved.
		return store.Receipt{}, failure(fmt.Errorf("the decision changed under the record's lock (%s)", res.Decision))
	}
	return *res.Receipt, nil
}

// outcomeAfter is the metrics' label of a Handler's transaction.
func outcomeAfter(err error) string {
	var he *handlerError
	switch {
	case err == nil:
		return outcomeAccepted
	case errors.As(err, &he):
		return "HANDLER_ERROR"
	}
	return outcomeOf(err)
}

// handlerError is h's own error: it rolled the transaction back.
type handlerError struct{ err error }

func (e *handlerError) Error() string { return "pgfence: handler: " + e.err.Error() }
func (e *handlerError) Unwrap() error { return e.err }

// answer writes the outcome of the transaction: h's answer after a
// commit, a replay, or a problem.
func (f *Fence) answer(w http.ResponseWriter, r *http.Request, req Request, rec *recorder, rc store.Receipt, err error) {
	var rp *Replayed
	var p *fencegate.Problem
	var he *handlerError
	switch {
	case err == nil:
		rec.flush(w, rc.ID)
	case errors.As(err, &rp):
		writeReceipt(w, &rp.Receipt)
	case errors.As(err, &he) && !errors.As(err, &p):
		f.o.log.Error("pgfence: the handler failed; its transaction rolled back", zap.String("resource", req.Resource), zap.Error(he.err))
		fencegate.WriteProblem(w, fencegate.NewProblem(fencegate.CodeInternal, "the handler failed; nothing was written"), 0)
	case errors.As(err, &p):
		fencegate.WriteProblem(w, p, retryAfter(p))
	default:
		// The transaction failed around the fence (begin, commit): whether
		// it committed is the database's to say, and a retry of the same
		// request is answered from the receipt if it did.
		f.o.log.Error("pgfence: the transaction failed", zap.String("resource", req.Resource), zap.Error(err))
		fencegate.WriteProblem(w, fencegate.NewProblem(fencegate.CodeStoreUnavailable,
			"the transaction did not complete: "+err.Error()+"; send the same request again (a write that committed is answered from its receipt)").With("retryable", true), 0)
	}
}

func retryAfter(p *fencegate.Problem) time.Duration {
	if p.Extra["retryable"] == true {
		return time.Second
	}
	return 0
}

// readRequest reads the fence headers, the caller's identity, the
// resource and the body; nothing here touches the store.
func (f *Fence) readRequest(r *http.Request, resource ResourceFunc) (Request, *fencegate.Problem) {
	caller, err := f.o.ident.Identify(r)
	if err != nil {
		return Request{}, fencegate.NewProblem(fencegate.CodeIdentityRequired, err.Error())
	}
	h := r.Header
	tok, present, ok := inbound.Single(h, fencegate.HeaderGrant)
	if !ok {
		return Request{}, fencegate.NewProblem(fencegate.CodeGrantInvalid, "Fence-Grant appears more than once")
	}
	if !present || tok == "" {
		return Request{}, fencegate.NewProblem(fencegate.CodeGrantRequired, "this route is protected: send Fence-Grant with a lockGrant.v1 grant")
	}
	seq, msg := inbound.ParseSegment(h)
	if msg != "" {
		return Request{}, fencegate.NewProblem(fencegate.CodeFenceHeaderInvalid, msg)
	}
	proof, _, ok := inbound.Single(h, fencegate.HeaderStatus)
	if !ok {
		return Request{}, fencegate.NewProblem(fencegate.CodeFenceHeaderInvalid, "Fence-Status appears more than once")
	}
	res, err := resource(r)
	if err != nil {
		return Request{}, fencegate.NewProblem(fencegate.CodeInvalidResource, err.Error())
	}
	body, p := f.readBody(r)
	if p != nil {
		return Request{}, p
	}
	return Request{Resource: res, Caller: caller, Grant: tok, Status: proof, Segment: seq,
		PayloadDigest: Digest(r.Method, r.URL.RequestURI(), body)}, nil
}

// readBody reads the whole body within the limit and checks
// Content-Digest; the handler reads it again from memory.
func (f *Fence) readBody(r *http.Request) ([]byte, *fencegate.Problem) {
	limit := f.o.bodyLimit
	if r.ContentLength > limit {
		return nil, fencegate.NewProblem(fencegate.CodeBodyTooLarge, "the body exceeds the limit").With("limit", limit)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, fencegate.NewProblem(fencegate.CodeBodyUnreadable, "the request body could not be read: "+err.Error())
	}
	if int64(len(body)) > limit {
		return nil, fencegate.NewProblem(fencegate.CodeBodyTooLarge, "the body exceeds the limit").With("limit", limit)
	}
	if msg := inbound.CheckContentDigest(r.Header, body); msg != "" {
		return nil, fencegate.NewProblem(fencegate.CodeDigestMismatch, msg)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, nil
}

// recorder holds h's answer until the transaction commits.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newRecorder() *recorder { return &recorder{header: http.Header{}} }

func (rec *recorder) Header() http.Header { return rec.header }

func (rec *recorder) WriteHeader(status int) {
	if rec.status == 0 {
		rec.status = status
	}
}

func (rec *recorder) Write(b []byte) (int, error) {
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return rec.body.Write(b)
}

// flush sends h's answer with the receipt's ID.
func (rec *recorder) flush(w http.ResponseWriter, receiptID string) {
	h := w.Header()
	for k, v := range rec.header {
		h[k] = v
	}
	h.Set(fencegate.HeaderReceipt, receiptID)
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	h.Set("Content-Length", strconv.Itoa(rec.body.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(rec.body.Bytes())
}

// writeReceipt answers a replay from its receipt, as the sidecar does: an
// incomplete stored answer is REPLAY_INCOMPLETE, never a cut one.
func writeReceipt(w http.ResponseWriter, rc *store.Receipt) {
	h := w.Header()
	h.Set(fencegate.HeaderReceipt, rc.ID)
	h.Set(fencegate.HeaderReplayed, "true")
	status := rc.Response.Status
	if status == 0 {
		status = rc.BackendStatus
	}
	if rc.Response.Truncated {
		fencegate.WriteProblem(w, fencegate.NewProblem(fencegate.CodeReplayIncomplete,
			"segment "+rc.OperationID+" was accepted (receipt "+rc.ID+") but its stored answer is incomplete, so it cannot be replayed").
			With("receiptId", rc.ID).With("operationId", rc.OperationID).With("backendStatus", status), 0)
		return
	}
	for k, v := range rc.Response.Header {
		h[k] = v
	}
	if _, ok := rc.Response.Header["Content-Type"]; !ok {
		h["Content-Type"] = nil
	}
	h.Set("Content-Length", strconv.Itoa(len(rc.Response.Body)))
	w.WriteHeader(status)
	_, _ = w.Write(rc.Response.Body)
}
