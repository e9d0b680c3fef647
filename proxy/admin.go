package proxy

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/store"
)

// adminProblem answers an admin (or worker API) request with a problem of
// an explicit status.
func adminProblem(w http.ResponseWriter, status int, code fencegate.Code, detail string) {
	fencegate.WriteProblem(w, fencegate.NewProblem(code, detail).WithStatus(status), 0)
}

// ReadyCheck is an extra readiness check (e.g. the registry answers).
type ReadyCheck func(ctx context.Context) error

// AdminHandler serves the admin API: /metrics, /healthz, /readyz, and under
// /v1 receipts, records, lists of unknown, quarantined and paused
// resources, reconcile, pause, resume and trust reload. Callers must be on
// loopback or present the admin bearer token.
func (p *Proxy) AdminHandler(ready ...ReadyCheck) http.Handler {
	r := chi.NewRouter()
	r.Use(p.adminOnly)
	r.NotFound(func(w http.ResponseWriter, _ *http.Request) {
		adminProblem(w, 404, fencegate.CodeNotFound, "no such route")
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, _ *http.Request) {
		adminProblem(w, 405, fencegate.CodeInvalidRequest, "method not allowed")
	})
	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	r.Get("/readyz", func(w http.ResponseWriter, req *http.Request) {
		ctx, cancel := context.WithTimeout(req.Context(), 2*time.Second)
		defer cancel()
		if _, err := p.store.ListPaused(ctx); err != nil {
			p.log.Error("readiness: listing paused resources failed; answering not ready", zap.Error(err))
			adminProblem(w, 503, fencegate.CodeStoreUnavailable, "store: "+err.Error())
			return
		}
		for _, c := range ready {
			if err := c(ctx); err != nil {
				adminProblem(w, 503, fencegate.CodeRegistryUnavailable, err.Error())
				return
			}
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	if p.gatherer != nil {
		r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(p.gatherer, promhttp.HandlerOpts{}))
	}
	r.Route("/v1", func(r chi.Router) {
		r.Get("/receipts", p.adminReceipts)
		r.Get("/resources/*", p.adminRecord)
		r.Get("/unknown", func(w http.ResponseWriter, req *http.Request) {
			list, err := p.store.ListUnknown(req.Context(), p.now())
			writeList(w, list, err)
		})
		r.Get("/paused", func(w http.ResponseWriter, req *http.Request) {
			list, err := p.store.ListPaused(req.Context())
			if err != nil {
				p.log.Error("admin: listing paused resources failed", zap.Error(err))
			}
			writeList(w, list, err)
		})
		r.Get("/quarantine", func(w http.ResponseWriter, req *http.Request) {
			list, err := p.store.ListQuarantined(req.Context(), req.URL.Query().Get("resource"))
			writeList(w, list, err)
		})
		r.Post("/reconcile", p.adminReconcile)
		r.Post("/pause", p.adminPause)
		r.Post("/resume", p.adminResume)
		r.Post("/trust/reload", p.adminTrustReload)
	})
	return r
}

func (p *Proxy) adminOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if tok, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer "); ok && p.admin != "" &&
			subtle.ConstantTimeCompare([]byte(tok), []byte(p.admin)) == 1 {
			next.ServeHTTP(w, req)
			return
		}
		host, _, err := net.SplitHostPort(req.RemoteAddr)
		if ip := net.ParseIP(host); err == nil && ip != nil && ip.IsLoopback() {
			next.ServeHTTP(w, req)
			return
		}
		adminProblem(w, 403, fencegate.CodeAdminRequired, "the admin API is served to loopback callers or with the admin bearer token")
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeList[T any](w http.ResponseWriter, list []T, err error) {
	if err != nil {
		adminProblem(w, 503, fencegate.CodeStoreUnavailable, err.Error())
		return
	}
	if list == nil {
		list = []T{}
	}
	writeJSON(w, 200, list)
}

func storeProblem(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, store.ErrInvalidInput):
		adminProblem(w, 400, fencegate.CodeInvalidRequest, err.Error())
	case errors.Is(err, store.ErrNotFound):
		adminProblem(w, 404, fencegate.CodeNotFound, err.Error())
	case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrNotPaused), errors.Is(err, store.ErrStillInFlight), errors.Is(err, store.ErrNotInFlight):
		adminProblem(w, 409, fencegate.CodeConflict, err.Error())
	default:
		adminProblem(w, 503, fencegate.CodeStoreUnavailable, err.Error())
	}
}

func (p *Proxy) adminReceipts(w http.ResponseWriter, req *http.Request) {
	if list, ok := p.receiptsQuery(w, req); ok {
		writeJSON(w, 200, list)
	}
}

// receiptsQuery answers ?resource=R&op=ID with the receipts of that
// operation, or writes the problem and reports false.
func (p *Proxy) receiptsQuery(w http.ResponseWriter, req *http.Request) ([]store.Receipt, bool) {
	q := req.URL.Query()
	res, op := q.Get("resource"), q.Get("op")
	if res == "" || op == "" {
		adminProblem(w, 400, fencegate.CodeInvalidRequest, "query parameters resource and op are required")
		return nil, false
	}
	list, err := p.store.ReceiptsByOperation(req.Context(), res, op)
	if err != nil {
		storeProblem(w, err)
		return nil, false
	}
	return list, true
}

func (p *Proxy) adminRecord(w http.ResponseWriter, req *http.Request) {
	rec, err := p.store.Record(req.Context(), chi.URLParam(req, "*"))
	if err != nil {
		storeProblem(w, err)
		return
	}
	writeJSON(w, 200, rec)
}

func decodeBody(w http.ResponseWriter, req *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, req.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		adminProblem(w, 400, fencegate.CodeInvalidRequest, "malformed JSON body: "+err.Error())
		return false
	}
	return true
}

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

func (p *Proxy) adminReconcile(w http.ResponseWriter, req *http.Request) {
	var rr ReconcileRequest
	if !decodeBody(w, req, &rr) {
		return
	}
	if rr.Resource == "" || rr.OperationID == "" {
		adminProblem(w, 400, fencegate.CodeInvalidRequest, "resource and operationId are required")
		return
	}
	out, err := p.resolve(req.Context(), rr.Resource, rr.OperationID, rr.Applied, rr.Status, []byte(rr.Body), "operator")
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			adminProblem(w, 404, fencegate.CodeNotFound, err.Error())
			return
		}
		storeProblem(w, err)
		return
	}
	p.log.Warn("mutation reconciled by operator", zap.String("resource", rr.Resource), zap.String("operationId", rr.OperationID),
		zap.Bool("applied", rr.Applied), zap.String("reason", rr.Reason))
	writeJSON(w, 200, out)
}

// resolve settles the unknown mutation with operation ID op.
func (p *Proxy) resolve(ctx context.Context, resource, op string, applied bool, status int, body []byte, how string) (store.ResolveResult, error) {
	list, err := p.store.ListUnknown(ctx, p.now())
	if err != nil {
		return store.ResolveResult{}, err
	}
	for _, m := range list {
		if m.Resource != resource || m.OperationID != op {
			continue
		}
		in := store.ResolveInput{OpRef: m.Ref(), Applied: applied, Now: p.now()}
		if applied {
			if status == 0 {
				status = http.StatusOK
			}
			in.BackendStatus = status
			in.Response = store.StoredResponse{Status: status, Body: body}
		}
		res, err := p.store.Resolve(ctx, in)
		if err != nil {
			return res, err
		}
		outcome := "not_applied"
		if applied {
			outcome = "applied"
		}
		p.m.reconciled.WithLabelValues(how, outcome).Inc()
		since := m.UnknownSince
		if since.IsZero() {
			since = m.Deadline
		}
		p.m.unknownTime.Observe(p.now().Sub(since).Seconds())
		p.settled(resource)
		return res, nil
	}
	return store.ResolveResult{}, fmt.Errorf("%w: no unknown mutation %s on %s", store.ErrNotFound, op, resource)
}

type resourceBody struct {
	Resource string `json:"resource"`
	Detail   string `json:"detail,omitempty"`
}

func (p *Proxy) adminPause(w http.ResponseWriter, req *http.Request) {
	var b resourceBody
	if !decodeBody(w, req, &b) {
		return
	}
	rec, err := p.store.Pause(req.Context(), store.PauseInput{Resource: b.Resource, Reason: store.PauseOperator, Detail: b.Detail, Now: p.now()})
	if err != nil {
		storeProblem(w, err)
		return
	}
	p.log.Warn("resource paused by operator", zap.String("resource", b.Resource), zap.String("detail", b.Detail))
	writeJSON(w, 200, rec)
}

func (p *Proxy) adminResume(w http.ResponseWriter, req *http.Request) {
	var b resourceBody
	if !decodeBody(w, req, &b) {
		return
	}
	rec, err := p.store.Resume(req.Context(), b.Resource)
	if err != nil {
		storeProblem(w, err)
		return
	}
	p.log.Warn("resource resumed by operator; the highest fence is kept", zap.String("resource", b.Resource), zap.Uint64("highestFence", rec.HighestFence))
	writeJSON(w, 200, rec)
}

func (p *Proxy) adminTrustReload(w http.ResponseWriter, req *http.Request) {
	var b struct {
		Force bool `json:"force"`
	}
	if req.ContentLength != 0 && !decodeBody(w, req, &b) {
		return
	}
	changed, err := p.trust.reload(b.Force)
	if err != nil {
		status := 500
		if errors.Is(err, ErrKeyInUse) {
			status = 409
		}
		adminProblem(w, status, fencegate.CodeConflict, err.Error())
		return
	}
	writeJSON(w, 200, map[string]any{"changed": changed, "kids": p.trust.current().KeyIDs()})
}
