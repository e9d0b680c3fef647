package adminapi

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/store"
)

// DefaultReceiptsLimit is the page size of GET /v1/receipts?resource=R
// without a limit.
const DefaultReceiptsLimit = 100

// ReceiptCursor is a position in a resource's receipts: (fence, seq),
// written "<fence>.<seq>" in decimal (the after parameter).
type ReceiptCursor struct {
	Fence, Seq uint64
}

// String is c's wire form.
func (c ReceiptCursor) String() string {
	return strconv.FormatUint(c.Fence, 10) + "." + strconv.FormatUint(c.Seq, 10)
}

// ParseReceiptCursor reads "<fence>.<seq>", two decimal numbers without
// signs or leading zeros, the fence at least 1.
func ParseReceiptCursor(s string) (ReceiptCursor, error) {
	f, q, ok := strings.Cut(s, ".")
	if !ok {
		return ReceiptCursor{}, fmt.Errorf("adminapi: receipt cursor %q: want <fence>.<seq>", s)
	}
	fence, err1 := parseCanonical(f)
	seq, err2 := parseCanonical(q)
	if err1 != nil || err2 != nil || fence == 0 {
		return ReceiptCursor{}, fmt.Errorf("adminapi: receipt cursor %q: want <fence>.<seq>, decimal, fence at least 1", s)
	}
	return ReceiptCursor{Fence: fence, Seq: seq}, nil
}

// parseCanonical parses a decimal uint64 written as FormatUint writes it.
func parseCanonical(s string) (uint64, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || strconv.FormatUint(n, 10) != s {
		return 0, fmt.Errorf("adminapi: %q is not a canonical decimal number", s)
	}
	return n, nil
}

// receiptParams reads the query of GET /v1/receipts: each known parameter
// at most once, no other.
func receiptParams(req *http.Request, known ...string) (url.Values, error) {
	v, err := url.ParseQuery(req.URL.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("malformed query string")
	}
	for k, vals := range v {
		if !slices.Contains(known, k) {
			return nil, fmt.Errorf("unknown query parameter %q (want %s)", k, strings.Join(known, ", "))
		}
		if len(vals) > 1 {
			return nil, fmt.Errorf("query parameter %s given more than once", k)
		}
	}
	return v, nil
}

// receipts answers GET /v1/receipts: ?resource=R&op=ID the receipts of
// that operation; ?resource=R[&after=F.S][&limit=N] a page of the
// resource's receipts.
func (s *server) receipts(w http.ResponseWriter, req *http.Request) {
	v, err := receiptParams(req, "resource", "op", "after", "limit")
	if err != nil {
		problem(w, 400, fencegate.CodeInvalidRequest, err.Error())
		return
	}
	res, op := v.Get("resource"), v.Get("op")
	switch {
	case res == "":
		problem(w, 400, fencegate.CodeInvalidRequest, "query parameter resource is required")
	case op != "" && (v.Has("after") || v.Has("limit")):
		problem(w, 400, fencegate.CodeInvalidRequest, "op names one operation: after and limit page a resource's receipts, without op")
	case op != "":
		list, err := s.Proxy.Receipts(req.Context(), res, op)
		if err != nil {
			storeProblem(w, err)
			return
		}
		writeJSON(w, 200, list)
	default:
		s.receiptsOf(w, req, res, v)
	}
}

// receiptsOf answers a page of resource's receipts.
func (s *server) receiptsOf(w http.ResponseWriter, req *http.Request, resource string, v url.Values) {
	q := store.ReceiptsQuery{Resource: resource, Limit: DefaultReceiptsLimit}
	if a := v.Get("after"); a != "" {
		c, err := ParseReceiptCursor(a)
		if err != nil {
			problem(w, 400, fencegate.CodeInvalidRequest, err.Error())
			return
		}
		q.AfterFence, q.AfterSeq = c.Fence, c.Seq
	}
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > store.MaxReceiptsLimit {
			problem(w, 400, fencegate.CodeInvalidRequest, "limit must be a number in 1.."+strconv.Itoa(store.MaxReceiptsLimit))
			return
		}
		q.Limit = n
	}
	list, err := s.Proxy.ReceiptsOf(req.Context(), q)
	if err != nil {
		storeProblem(w, err)
		return
	}
	if list == nil {
		list = []store.Receipt{}
	}
	writeJSON(w, 200, list)
}

// receipt answers GET /v1/receipts/{id}?resource=R: the receipt of the
// Fence-Receipt id a worker got back.
func (s *server) receipt(w http.ResponseWriter, req *http.Request) {
	v, err := receiptParams(req, "resource")
	if err != nil {
		problem(w, 400, fencegate.CodeInvalidRequest, err.Error())
		return
	}
	if v.Get("resource") == "" {
		problem(w, 400, fencegate.CodeInvalidRequest, "query parameter resource is required (the resource the write was for)")
		return
	}
	rc, err := s.Proxy.ReceiptByID(req.Context(), v.Get("resource"), chi.URLParam(req, "id"))
	if err != nil {
		storeProblem(w, err)
		return
	}
	writeJSON(w, 200, rc)
}
