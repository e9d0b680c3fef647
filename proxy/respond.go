package proxy

import (
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/fencegate/fencegate/internal/problem"
	"github.com/fencegate/fencegate/store"
)

func (p *Proxy) writeProblem(w http.ResponseWriter, r *rejection, retry time.Duration) {
	problem.Write(w, r.problem(), retry)
}

// writeForwarded writes the backend's whole answer with the receipt ID
// (none when receiptID is "": no receipt was stored). It closes r.
func (p *Proxy) writeForwarded(w http.ResponseWriter, r *backendResponse, receiptID string) {
	defer r.close()
	h := w.Header()
	for k, v := range r.header {
		h[k] = v
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
	if receiptID != "" {
		h.Set(HeaderReceipt, receiptID)
	} else {
		h.Del(HeaderReceipt)
	}
	if r.rest == nil {
		h.Set("Content-Length", strconv.Itoa(len(r.body)))
	} else {
		h.Del("Content-Length")
	}
	w.WriteHeader(r.status)
	_, _ = w.Write(r.body)
	if r.rest != nil {
		_, _ = io.Copy(w, r.rest)
	}
}

// writeReceipt answers from a stored receipt (a replay).
func (p *Proxy) writeReceipt(w http.ResponseWriter, rc *store.Receipt, replayed bool) {
	h := w.Header()
	for k, v := range rc.Response.Header {
		h[k] = v
	}
	h.Set(HeaderReceipt, rc.ID)
	if replayed {
		h.Set(HeaderReplayed, "true")
	}
	if rc.Response.Truncated {
		h.Set("Fence-Response-Truncated", "true")
	}
	h.Set("Content-Length", strconv.Itoa(len(rc.Response.Body)))
	status := rc.Response.Status
	if status == 0 {
		status = rc.BackendStatus
	}
	w.WriteHeader(status)
	_, _ = w.Write(rc.Response.Body)
}
