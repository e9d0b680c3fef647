package proxy

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/store"
)

// selfPrefix is the sidecar's own API on the inbound listener, for workers.
const selfPrefix = "/.fencegate/"

// receiptInfo is what a worker may learn of a receipt on the inbound
// listener: everything but the stored response (the contract's wire type).
func receiptInfo(r store.Receipt) fencegate.Receipt {
	return fencegate.Receipt{ID: r.ID, Resource: r.Resource, Fence: r.Fence, Seq: r.Seq, OperationID: r.OperationID,
		PayloadDigest: r.PayloadDigest, GrantDigest: r.GrantDigest, BackendStatus: r.BackendStatus,
		AcceptedAt: r.AcceptedAt, Source: string(r.Source)}
}

// serveSelf serves GET /.fencegate/v1/receipts?resource=R&op=ID to
// identified callers, for the receipts of their own grants: the recovery
// path of a worker whose mutation's outcome it did not learn.
func (p *Proxy) serveSelf(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != selfPrefix+"v1/receipts" || req.Method != http.MethodGet {
		selfProblem(w, 404, fencegate.CodeNotFound, "no such sidecar route")
		return
	}
	caller, err := p.auth.Identify(req)
	if err != nil {
		p.writeProblem(w, reject(fencegate.CodeIdentityRequired, err.Error()), 0)
		return
	}
	q := req.URL.Query()
	res, op := q.Get("resource"), q.Get("op")
	if res == "" || op == "" {
		selfProblem(w, 400, fencegate.CodeInvalidRequest, "query parameters resource and op are required")
		return
	}
	list, err := p.store.ReceiptsByOperation(req.Context(), res, op)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		selfStoreProblem(w, err)
		return
	}
	// A worker sees only the receipts its own grants produced. Receipts
	// stored before owners were recorded have none and are shown to nobody
	// here (the admin API still lists them). Receipts of others answer
	// exactly like no receipt at all, so their existence is not revealed.
	out := make([]fencegate.Receipt, 0, len(list))
	for _, r := range list {
		if r.Owner != "" && r.Owner == caller {
			out = append(out, receiptInfo(r))
		}
	}
	if len(out) == 0 {
		selfProblem(w, 404, fencegate.CodeNotFound, "no receipt of yours for this operation")
		return
	}
	writeJSON(w, 200, out)
}

// selfProblem answers a request of the sidecar's own API with a problem of
// an explicit status.
func selfProblem(w http.ResponseWriter, status int, code fencegate.Code, detail string) {
	fencegate.WriteProblem(w, fencegate.NewProblem(code, detail).WithStatus(status), 0)
}

// selfStoreProblem answers a store error with the code its kind calls
// for (store.ErrorCode) and that code's status.
func selfStoreProblem(w http.ResponseWriter, err error) {
	code := store.ErrorCode(err)
	selfProblem(w, code.Status(), code, err.Error())
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
