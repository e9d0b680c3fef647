package httpapi

import (
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/fencegate/fencegate"
)

// The store anchor routes (/v1/stores/{store}/...; docs/registry-api.md).
// Every one needs an established identity that the policy matching
// "fencegate-store/<store>" allows (the registry decides that, with the
// rest, in one step), but the acknowledgement, which is an admin call. The
// store name is taken as it is in the path: 1..128 bytes of
// [A-Za-z0-9._-], so any other spelling (a percent-encoding, a dot
// segment) is INVALID_REQUEST, never another store.

// storeParam is the store named by the path, or false after answering
// INVALID_REQUEST.
func (s *server) storeParam(w http.ResponseWriter, req *http.Request) (string, bool) {
	store := chi.URLParam(req, "store")
	if err := fencegate.ValidateStoreName(store); err != nil {
		s.fail(w, req, fencegate.NewProblem(fencegate.CodeInvalidRequest, err.Error()), 0)
		return "", false
	}
	return store, true
}

// storeCall establishes the caller and the store of a store route.
func (s *server) storeCall(w http.ResponseWriter, req *http.Request) (caller, store string, ok bool) {
	if caller, ok = s.caller(w, req); !ok {
		return "", "", false
	}
	store, ok = s.storeParam(w, req)
	return caller, store, ok
}

// registerStore is PUT /v1/stores/{store}: 201 when this registration
// anchored the generation, 200 when it matched, 409 STORE_LOST otherwise.
func (s *server) registerStore(w http.ResponseWriter, req *http.Request) {
	caller, store, ok := s.storeCall(w, req)
	if !ok {
		return
	}
	var b fencegate.StoreRegistration
	if !s.decode(w, req, &b) {
		return
	}
	res, err := s.Registry.RegisterStore(req.Context(), caller, store, b.Generation)
	if err != nil {
		s.failErr(w, req, err)
		return
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	writeJSON(w, status, res.View.Wire())
}

func (s *server) getStore(w http.ResponseWriter, req *http.Request) {
	caller, store, ok := s.storeCall(w, req)
	if !ok {
		return
	}
	v, err := s.Registry.Store(req.Context(), caller, store)
	if err != nil {
		s.failErr(w, req, err)
		return
	}
	writeJSON(w, http.StatusOK, v.Wire())
}

// anchor is POST /v1/stores/{store}/progress: a batch of anchor steps
// decided in one transaction (bodies up to fencegate.MaxAnchorBodyBytes).
func (s *server) anchor(w http.ResponseWriter, req *http.Request) {
	caller, store, ok := s.storeCall(w, req)
	if !ok {
		return
	}
	var b fencegate.AnchorRequest
	if !s.decodeLimit(w, req, &b, fencegate.MaxAnchorBodyBytes) {
		return
	}
	resp, err := s.Registry.Anchor(req.Context(), caller, store, b)
	if err != nil {
		s.failErr(w, req, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *server) ledger(w http.ResponseWriter, req *http.Request) {
	caller, store, ok := s.storeCall(w, req)
	if !ok {
		return
	}
	var b fencegate.LedgerBody
	if !s.decode(w, req, &b) {
		return
	}
	v, err := s.Registry.RecordLedger(req.Context(), caller, store, b)
	if err != nil {
		s.failErr(w, req, err)
		return
	}
	writeJSON(w, http.StatusOK, v.Wire())
}

// listAnchors is GET /v1/stores/{store}/anchors?after=&limit=. Each
// parameter at most once, nothing else; limit a decimal in
// 1..fencegate.MaxAnchorPage.
func (s *server) listAnchors(w http.ResponseWriter, req *http.Request) {
	caller, store, ok := s.storeCall(w, req)
	if !ok {
		return
	}
	q := req.URL.Query()
	for k, vs := range q {
		if (k != "after" && k != "limit") || len(vs) != 1 {
			s.fail(w, req, fencegate.NewProblem(fencegate.CodeInvalidRequest, "query parameters: after and limit, each at most once"), 0)
			return
		}
	}
	limit := 0
	if v, set := q["limit"]; set {
		n, err := strconv.Atoi(v[0])
		if err != nil || n < 1 || n > fencegate.MaxAnchorPage || strconv.Itoa(n) != v[0] {
			s.fail(w, req, fencegate.NewProblem(fencegate.CodeInvalidRequest, "limit must be a decimal from 1 to "+strconv.Itoa(fencegate.MaxAnchorPage)), 0)
			return
		}
		limit = n
	}
	page, err := s.Registry.Anchors(req.Context(), caller, store, q.Get("after"), limit)
	if err != nil {
		s.failErr(w, req, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// acknowledge is POST /v1/stores/{store}/acknowledge (admin).
func (s *server) acknowledge(w http.ResponseWriter, req *http.Request) {
	store, ok := s.storeParam(w, req)
	if !ok {
		return
	}
	var b fencegate.AcknowledgeBody
	if !s.decode(w, req, &b) {
		return
	}
	res, err := s.Registry.AcknowledgeLoss(req.Context(), store, b.Generation)
	if err != nil {
		s.failErr(w, req, err)
		return
	}
	writeJSON(w, http.StatusOK, res.View.Wire())
}
