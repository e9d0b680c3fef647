package httpapi

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/registry"
)

func (s *server) acquire(w http.ResponseWriter, req *http.Request) {
	owner, ok := s.caller(w, req)
	if !ok {
		return
	}
	var b fencegate.AcquireBody
	if !s.decode(w, req, &b) {
		return
	}
	if !validMs(b.TTLMs) || !validMs(b.WaitMs) {
		s.fail(w, req, fencegate.NewProblem(fencegate.CodeInvalidRequest, "ttlMs and waitMs must be non-negative durations in milliseconds"), 0)
		return
	}
	res, err := s.Registry.Acquire(req.Context(), registry.AcquireRequest{
		Resource:  b.Resource,
		Owner:     owner,
		RequestID: b.RequestID,
		OpClass:   b.OpClass,
		TTL:       time.Duration(b.TTLMs) * time.Millisecond,
		Wait:      time.Duration(b.WaitMs) * time.Millisecond,
	})
	if err != nil {
		s.failErr(w, req, err)
		return
	}
	status := http.StatusCreated
	if res.Existing {
		status = http.StatusOK
	}
	writeJSON(w, status, leaseBody(res, owner))
}

func (s *server) lookup(w http.ResponseWriter, req *http.Request) {
	owner, ok := s.caller(w, req)
	if !ok {
		return
	}
	id := chi.URLParam(req, "requestID")
	if err := registry.ValidateRequestID(id); err != nil {
		s.failErr(w, req, err)
		return
	}
	res, err := s.Registry.Status(req.Context(), registry.LeaseQuery{Owner: owner, RequestID: id})
	if err != nil {
		s.failErr(w, req, err)
		return
	}
	res.Existing = true
	writeJSON(w, http.StatusOK, leaseBody(res, owner))
}

func (s *server) renew(w http.ResponseWriter, req *http.Request) {
	owner, ok := s.caller(w, req)
	if !ok {
		return
	}
	var b fencegate.RenewBody
	if !s.decode(w, req, &b) {
		return
	}
	if !validMs(b.TTLMs) {
		s.fail(w, req, fencegate.NewProblem(fencegate.CodeInvalidRequest, "ttlMs must be a non-negative duration in milliseconds"), 0)
		return
	}
	// ttlMs 0 (or no body) renews by the lease's own TTL, never by the
	// registry's default: see Registry.Renew.
	res, err := s.Registry.Renew(req.Context(), owner, chi.URLParam(req, "lease"), time.Duration(b.TTLMs)*time.Millisecond)
	if err != nil {
		d, retry := toProblem(err)
		if d.Code == fencegate.CodeLeaseNotHeld {
			// The problem carries the signed proof of the state so the
			// client can move to EXPIRED on evidence, not on a guess.
			d.With("state", res.View.State).With("status", string(res.Status))
		}
		s.fail(w, req, d, retry)
		return
	}
	writeJSON(w, http.StatusOK, leaseBody(res, owner))
}

// validMs reports whether v milliseconds is a non-negative duration that
// time.Duration holds: a larger value would wrap around (possibly into the
// accepted TTL range) when converted.
func validMs(v int64) bool { return v >= 0 && v <= math.MaxInt64/int64(time.Millisecond) }

func (s *server) release(w http.ResponseWriter, req *http.Request) {
	owner, ok := s.caller(w, req)
	if !ok {
		return
	}
	res, err := s.Registry.Release(req.Context(), owner, chi.URLParam(req, "lease"))
	if err != nil {
		s.failErr(w, req, err)
		return
	}
	writeJSON(w, http.StatusOK, leaseBody(res, owner))
}

// callerIfAny is the caller's identity when one is established; status
// reads are open to any caller (a sidecar in registry mode is not the owner).
func (s *server) callerIfAny(req *http.Request) string {
	id, err := s.Identity.Identify(req)
	if err != nil {
		return ""
	}
	return id
}

func (s *server) leaseStatus(w http.ResponseWriter, req *http.Request) {
	s.status(w, req, registry.LeaseQuery{Lease: chi.URLParam(req, "lease")})
}

func (s *server) grantStatus(w http.ResponseWriter, req *http.Request) {
	d := chi.URLParam(req, "digest")
	if fencegate.ValidateDigest(d) != nil {
		s.fail(w, req, fencegate.NewProblem(fencegate.CodeInvalidRequest, "grant digest must be sha256: and 64 lowercase hex digits"), 0)
		return
	}
	res, err := s.Registry.GrantStatus(req.Context(), d)
	s.answerStatus(w, req, res, err)
}

func (s *server) status(w http.ResponseWriter, req *http.Request, q registry.LeaseQuery) {
	if q.Lease != "" && (len(q.Lease) > 128 || strings.ContainsAny(q.Lease, "/\x00")) {
		s.fail(w, req, fencegate.NewProblem(fencegate.CodeInvalidRequest, "malformed lease ID"), 0)
		return
	}
	res, err := s.Registry.Status(req.Context(), q)
	s.answerStatus(w, req, res, err)
}

// answerStatus writes a status read's result or its error.
func (s *server) answerStatus(w http.ResponseWriter, req *http.Request, res registry.Result, err error) {
	if err != nil {
		s.failErr(w, req, err)
		return
	}
	writeJSON(w, http.StatusOK, leaseBody(res, s.callerIfAny(req)))
}

func (s *server) resource(w http.ResponseWriter, req *http.Request) {
	id := chi.URLParam(req, "*")
	v, err := s.Registry.Resource(req.Context(), id)
	if err != nil {
		s.failErr(w, req, err)
		return
	}
	out := fencegate.Resource{
		Resource:         v.Record.Resource,
		LastFence:        v.Record.LastFence,
		FenceFloor:       v.Record.FenceFloor,
		GlobalFenceFloor: v.Meta.FenceFloor,
		PolicyGeneration: v.PolicyGeneration,
		IssuerEpoch:      v.Meta.IssuerEpoch,
	}
	if v.Holder != nil {
		h := leaseWire(*v.Holder, "")
		out.Holder = &h
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *server) bumpEpoch(w http.ResponseWriter, req *http.Request) {
	m, err := s.Registry.BumpEpoch(req.Context())
	if err != nil {
		s.failErr(w, req, err)
		return
	}
	writeJSON(w, http.StatusOK, metaBody(m))
}

func (s *server) meta(w http.ResponseWriter, req *http.Request) {
	m, err := s.Registry.Meta(req.Context())
	if err != nil {
		s.failErr(w, req, err)
		return
	}
	writeJSON(w, http.StatusOK, metaBody(m))
}

func (s *server) fenceFloor(w http.ResponseWriter, req *http.Request) {
	var b fencegate.FenceFloorBody
	if !s.decode(w, req, &b) {
		return
	}
	if b.Floor == 0 {
		s.fail(w, req, fencegate.NewProblem(fencegate.CodeInvalidRequest, "floor must be at least 1"), 0)
		return
	}
	m, rec, err := s.Registry.RaiseFenceFloor(req.Context(), b.Resource, b.Floor)
	if err != nil {
		s.failErr(w, req, err)
		return
	}
	writeJSON(w, http.StatusOK, fencegate.FenceFloorAnswer{Meta: metaBody(m), Resource: fencegate.FenceFloorResource{
		Resource: rec.Resource, LastFence: rec.LastFence, FenceFloor: rec.FenceFloor, Holder: rec.Holder, FreedAt: rec.FreedAt,
	}})
}

func (s *server) listPolicies(w http.ResponseWriter, req *http.Request) {
	ps, err := s.Registry.Policies(req.Context())
	if err != nil {
		s.failErr(w, req, err)
		return
	}
	if ps == nil {
		ps = []fencegate.Policy{} // [], never null
	}
	writeJSON(w, http.StatusOK, ps)
}

func (s *server) putPolicy(w http.ResponseWriter, req *http.Request) {
	var p fencegate.Policy
	if !s.decode(w, req, &p) {
		return
	}
	if p.Generation != 0 || p.Deleted || p.UpdatedAt != 0 {
		s.fail(w, req, fencegate.NewProblem(fencegate.CodeInvalidRequest, "generation, deleted and updatedAt are set by the registry"), 0)
		return
	}
	out, err := s.Registry.PutPolicy(req.Context(), p)
	if err != nil {
		s.failErr(w, req, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *server) deletePolicy(w http.ResponseWriter, req *http.Request) {
	pattern := req.URL.Query().Get("pattern")
	if pattern == "" {
		s.fail(w, req, fencegate.NewProblem(fencegate.CodeInvalidRequest, "query parameter pattern is required"), 0)
		return
	}
	out, err := s.Registry.DeletePolicy(req.Context(), pattern)
	if err != nil {
		s.failErr(w, req, fmt.Errorf("delete policy: %w", err))
		return
	}
	writeJSON(w, http.StatusOK, out)
}
