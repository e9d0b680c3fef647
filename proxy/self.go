package proxy

import (
	"net/http"

	"github.com/fencegate/fencegate/registry/client"
	"github.com/fencegate/fencegate/store"
)

// selfPrefix is the sidecar's own API on the inbound listener, for workers.
const selfPrefix = "/.fencegate/"

// ReceiptInfo is what a worker may learn of a receipt on the inbound
// listener: everything but the stored response (the SDK's wire type).
type ReceiptInfo = client.Receipt

func receiptInfo(r store.Receipt) ReceiptInfo {
	return ReceiptInfo{ID: r.ID, Resource: r.Resource, Fence: r.Fence, Seq: r.Seq, OperationID: r.OperationID,
		PayloadDigest: r.PayloadDigest, GrantDigest: r.GrantDigest, BackendStatus: r.BackendStatus,
		AcceptedAt: r.AcceptedAt, Source: string(r.Source)}
}

// serveSelf serves GET /.fencegate/v1/receipts?resource=R&op=ID to
// identified callers: the recovery path of a worker whose mutation's
// outcome it did not learn.
func (p *Proxy) serveSelf(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != selfPrefix+"v1/receipts" || req.Method != http.MethodGet {
		adminProblem(w, 404, CodeNotFound, "no such sidecar route")
		return
	}
	if _, err := p.ident.Identify(req); err != nil {
		p.writeProblem(w, reject(CodeIdentityRequired, err.Error()), 0)
		return
	}
	list, ok := p.receiptsQuery(w, req)
	if !ok {
		return
	}
	out := make([]ReceiptInfo, len(list))
	for i, r := range list {
		out[i] = receiptInfo(r)
	}
	writeJSON(w, 200, out)
}
