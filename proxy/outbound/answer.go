package outbound

import (
	"io"
	"net/http"
	"strconv"

	"github.com/fencegate/fencegate"
)

// What the client receives of a protected write's answer (outbound.go
// says the rest).

// Write answers the client with the backend's whole answer and the
// receipt ID (none when receiptID is "": no receipt was stored). It closes
// r.
func (r *Response) Write(w http.ResponseWriter, receiptID string) {
	defer r.Close()
	h := w.Header()
	for k, v := range r.Header {
		h[k] = v
	}
	RemoveHopHeaders(h) // also those the backend's Connection names (send removed them already)
	// Only the sidecar speaks in its namespace: none of the backend's
	// Fence-* fields, in any spelling, reaches the client (namespace.go),
	// as none is kept for a replay (storedHeader).
	RemoveSidecarOwned(h)
	if _, ok := r.Header["Content-Type"]; !ok {
		h["Content-Type"] = nil // the backend sent none: send none, never net/http's sniffed guess
	}
	if receiptID != "" {
		h.Set(fencegate.HeaderReceipt, receiptID)
	} else {
		h.Del(fencegate.HeaderReceipt)
	}
	if r.Rest == nil {
		h.Set("Content-Length", strconv.Itoa(len(r.Body)))
	} else {
		h.Del("Content-Length")
	}
	w.WriteHeader(r.Status)
	_, _ = w.Write(r.Body)
	if r.Rest != nil {
		_, _ = io.Copy(w, r.Rest)
	}
}
