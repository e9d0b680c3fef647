package httpapi

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/registry"
)

// listLeases answers GET /v1/admin/leases?resource=|prefix=&state=&after=&limit=.
func (s *server) listLeases(w http.ResponseWriter, req *http.Request) {
	q, err := leasesQuery(req)
	if err != nil {
		s.failErr(w, req, err)
		return
	}
	page, err := s.Registry.Leases(req.Context(), q)
	if err != nil {
		s.failErr(w, req, err)
		return
	}
	out := fencegate.LeasePage{Leases: make([]fencegate.ListedLease, 0, len(page.Leases)), Next: page.Next.String()}
	for _, v := range page.Leases {
		l := fencegate.ListedLease{Lease: leaseWire(v, "")} // never a grant
		if v.Lease.EndedAt != 0 {
			l.EndedAt = time.UnixMilli(v.Lease.EndedAt).UTC()
		}
		out.Leases = append(out.Leases, l)
	}
	writeJSON(w, http.StatusOK, out)
}

// leasesQuery reads a listing's query parameters; a bad one is
// registry.ErrInvalidInput.
func leasesQuery(req *http.Request) (registry.LeasesQuery, error) {
	v, err := url.ParseQuery(req.URL.RawQuery)
	if err != nil {
		return registry.LeasesQuery{}, invalidParam("malformed query string")
	}
	for k := range v {
		switch k {
		case "resource", "prefix", "state", "after", "limit":
		default:
			return registry.LeasesQuery{}, invalidParam("unknown query parameter " + strconv.Quote(k) + " (want resource, prefix, state, after, limit)")
		}
		if len(v[k]) > 1 {
			return registry.LeasesQuery{}, invalidParam("query parameter " + k + " given more than once")
		}
	}
	q := registry.LeasesQuery{Resource: v.Get("resource"), Prefix: v.Get("prefix"), State: v.Get("state")}
	if q.After, err = registry.ParseLeaseCursor(v.Get("after")); err != nil {
		return q, err
	}
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > registry.MaxLeasesLimit {
			return q, invalidParam("limit must be a number in 1.." + strconv.Itoa(registry.MaxLeasesLimit))
		}
		q.Limit = n
	}
	return q, nil
}

func invalidParam(why string) error { return &paramError{why} }

// paramError is a bad query parameter (it wraps registry.ErrInvalidInput,
// so toProblem answers INVALID_REQUEST).
type paramError struct{ why string }

func (e *paramError) Error() string { return "httpapi: " + e.why }
func (e *paramError) Unwrap() error { return registry.ErrInvalidInput }

// maxRevokeReason bounds RevokeBody.Reason.
const maxRevokeReason = 1024

// revokeLease answers POST /v1/admin/leases/{lease}/revoke (an optional
// RevokeBody).
func (s *server) revokeLease(w http.ResponseWriter, req *http.Request) {
	var b fencegate.RevokeBody
	if !s.decode(w, req, &b) {
		return
	}
	if len(b.Reason) > maxRevokeReason {
		s.fail(w, req, fencegate.NewProblem(fencegate.CodeInvalidRequest, "reason is longer than "+strconv.Itoa(maxRevokeReason)+" bytes"), 0)
		return
	}
	res, revoked, err := s.Registry.RevokeLease(req.Context(), chi.URLParam(req, "lease"))
	if err != nil {
		s.failErr(w, req, err)
		return
	}
	if revoked {
		s.Logger.Warn("lease revoked through the admin API", zap.String("lease", res.View.Lease.Lease),
			zap.String("resource", res.View.Lease.Resource), zap.String("reason", b.Reason))
	}
	writeJSON(w, http.StatusOK, fencegate.RevokeAnswer{Revoked: revoked, Lease: leaseBody(res, "")})
}
