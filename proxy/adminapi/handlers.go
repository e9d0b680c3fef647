package adminapi

import (
	"errors"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/authn"
	"github.com/fencegate/fencegate/store"
)

// ReconcileRequest is the body of POST /v1/reconcile.
type ReconcileRequest struct {
	Resource    string `json:"resource"`
	OperationID string `json:"operationId"`
	// Applied: the mutation took effect (false: proven not applied).
	Applied bool `json:"applied"`
	// Status and Body are the response replays return (Applied only).
	Status int    `json:"status,omitempty"`
	Body   string `json:"body,omitempty"`
	// Reason is logged.
	Reason string `json:"reason,omitempty"`
}

// ReconcileAnswer is the answer of POST /v1/reconcile.
type ReconcileAnswer struct {
	// Applied echoes the request.
	Applied bool `json:"applied"`
	// Receipt is the receipt written (or found) when Applied.
	Receipt *store.Receipt `json:"receipt,omitempty"`
	// Record is the resource's record afterwards.
	Record store.Record `json:"record"`
}

// resourceBody is the body of POST /v1/pause and /v1/resume.
type resourceBody struct {
	Resource string `json:"resource"`
	Detail   string `json:"detail,omitempty"`
}

func (s *server) record(w http.ResponseWriter, req *http.Request) {
	rec, err := s.Proxy.Record(req.Context(), chi.URLParam(req, "*"))
	if err != nil {
		storeProblem(w, err)
		return
	}
	writeJSON(w, 200, rec)
}

func (s *server) unknown(w http.ResponseWriter, req *http.Request) {
	list, err := s.Proxy.Unknown(req.Context())
	writeList(w, list, err)
}

func (s *server) paused(w http.ResponseWriter, req *http.Request) {
	list, err := s.Proxy.Paused(req.Context())
	if err != nil {
		s.Logger.Error("admin: listing paused resources failed", zap.Error(err))
	}
	writeList(w, list, err)
}

func (s *server) quarantine(w http.ResponseWriter, req *http.Request) {
	list, err := s.Proxy.Quarantined(req.Context(), req.URL.Query().Get("resource"))
	writeList(w, list, err)
}

func (s *server) reconcile(w http.ResponseWriter, req *http.Request) {
	var rr ReconcileRequest
	if !decodeBody(w, req, &rr) {
		return
	}
	if rr.Resource == "" || rr.OperationID == "" {
		problem(w, 400, fencegate.CodeInvalidRequest, "resource and operationId are required")
		return
	}
	out, err := s.Proxy.Reconcile(req.Context(), rr.Resource, rr.OperationID, rr.Applied, rr.Status, []byte(rr.Body))
	if nq := (*store.NotQuietError)(nil); errors.As(err, &nq) {
		// "Not found yet" is not "never will be": the backend may still
		// apply it until quietAt. Applied stays possible at any time.
		s.Logger.Warn("operator's not-applied refused: the mutation may still take effect", zap.String("resource", rr.Resource),
			zap.String("operationId", rr.OperationID), zap.Time("quietAt", nq.QuietAt), zap.String("reason", rr.Reason))
		p := fencegate.NewProblem(fencegate.CodeMayStillApply, "the backend may still apply "+rr.OperationID+" until "+nq.QuietAt.UTC().Format(time.RFC3339)+
			" (the forward's deadline plus backend.maxApplyDelay): a not-applied found before then can be overtaken. Look at the backend again after quietAt, or settle it as applied if it took effect").
			With("quietAt", nq.QuietAt.UTC().Format(time.RFC3339Nano)).With("operationId", rr.OperationID).With("resource", rr.Resource)
		fencegate.WriteProblem(w, p, nq.Remaining)
		return
	}
	if err != nil {
		storeProblem(w, err)
		return
	}
	s.Logger.Warn("mutation reconciled by operator", zap.String("resource", rr.Resource), zap.String("operationId", rr.OperationID),
		zap.Bool("applied", rr.Applied), zap.String("reason", rr.Reason))
	writeJSON(w, 200, ReconcileAnswer{Applied: out.Applied, Receipt: out.Receipt, Record: out.Record})
}

func (s *server) pause(w http.ResponseWriter, req *http.Request) {
	var b resourceBody
	if !decodeBody(w, req, &b) {
		return
	}
	rec, err := s.Proxy.Pause(req.Context(), b.Resource, b.Detail)
	if err != nil {
		storeProblem(w, err)
		return
	}
	s.Logger.Warn("resource paused by operator", zap.String("resource", b.Resource), zap.String("detail", b.Detail))
	writeJSON(w, 200, rec)
}

func (s *server) resume(w http.ResponseWriter, req *http.Request) {
	var b resourceBody
	if !decodeBody(w, req, &b) {
		return
	}
	rec, err := s.Proxy.Resume(req.Context(), b.Resource)
	if err != nil {
		storeProblem(w, err)
		return
	}
	s.Logger.Warn("resource resumed by operator; the highest fence is kept", zap.String("resource", b.Resource), zap.Uint64("highestFence", rec.HighestFence))
	writeJSON(w, 200, rec)
}

func (s *server) trustReload(w http.ResponseWriter, req *http.Request) {
	var b struct {
		Force bool `json:"force"`
	}
	if req.ContentLength != 0 && !decodeBody(w, req, &b) {
		return
	}
	changed, err := s.Proxy.ReloadTrust(b.Force)
	if err != nil {
		status := 500
		if errors.Is(err, authn.ErrKeyInUse) {
			status = 409
		}
		problem(w, status, fencegate.CodeConflict, err.Error())
		return
	}
	writeJSON(w, 200, map[string]any{"changed": changed, "kids": s.Proxy.TrustKeyIDs()})
}

// storeProblem answers a store error with the code its kind calls for
// (store.ErrorCode) and that code's status.
func storeProblem(w http.ResponseWriter, err error) {
	code := store.ErrorCode(err)
	problem(w, code.Status(), code, err.Error())
}
