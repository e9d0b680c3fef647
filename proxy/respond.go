package proxy

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/proxy/outbound"
	"github.com/fencegate/fencegate/store"
)

func (p *Proxy) writeProblem(w http.ResponseWriter, r *rejection, retry time.Duration) {
	fencegate.WriteProblem(w, r.problem(), retry)
}

// writeReceipt answers from a stored receipt (a replay): the stored status,
// headers and body, with Fence-Receipt (and Fence-Replayed). A stored
// response that is incomplete (Truncated: its body was cut or a header
// dropped to fit the store) is never handed out as the answer: the client
// gets REPLAY_INCOMPLETE instead, which says the write was accepted
// (receiptId, operationId, backendStatus).
func (p *Proxy) writeReceipt(w http.ResponseWriter, rc *store.Receipt, replayed bool) {
	h := w.Header()
	status := rc.Response.Status
	if status == 0 {
		status = rc.BackendStatus
	}
	if rc.Response.Truncated {
		h.Set(fencegate.HeaderReceipt, rc.ID)
		if replayed {
			h.Set(fencegate.HeaderReplayed, "true")
		}
		p.writeProblem(w, replayIncomplete(rc, status), 0)
		return
	}
	for k, v := range rc.Response.Header {
		if !outbound.SidecarOwned(k) { // kept by a version that dropped only the canonical Fence-*
			h[k] = v
		}
	}
	if _, ok := rc.Response.Header["Content-Type"]; !ok {
		h["Content-Type"] = nil // none was stored: send none, never a sniffed guess
	}
	h.Set(fencegate.HeaderReceipt, rc.ID)
	if replayed {
		h.Set(fencegate.HeaderReplayed, "true")
	}
	h.Set("Content-Length", strconv.Itoa(len(rc.Response.Body)))
	w.WriteHeader(status)
	_, _ = w.Write(rc.Response.Body)
}

// replayIncomplete is the answer to a replay of a receipt whose stored
// response is incomplete: the write was accepted under receipt rc.ID, but
// what the backend answered cannot be given again whole.
func replayIncomplete(rc *store.Receipt, status int) *rejection {
	return reject(fencegate.CodeReplayIncomplete, fmt.Sprintf("segment %s was accepted (receipt %s, backend status %d) but its stored answer "+
		"is incomplete (the body exceeded the route's responseStoreLimit or a header did not fit the store), so it cannot be replayed; "+
		"the segment stays accepted: go on with the next one, and read the resource if its answer is needed", rc.OperationID, rc.ID, status)).
		with("receiptId", rc.ID).with("operationId", rc.OperationID).with("backendStatus", status)
}
