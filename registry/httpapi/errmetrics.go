package httpapi

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fencegate/fencegate"
)

// Operations of fencegate_registry_errors_total{op}.
const (
	opAcquire  = "acquire"
	opLookup   = "lookup"
	opRenew    = "renew"
	opRelease  = "release"
	opStatus   = "status"
	opResource = "resource"
	// opStore: a fenced store's registration, read, ledger and anchor
	// listing; opAnchor: its anchor batches (progress); opAcknowledge:
	// the admin acknowledgement of its loss.
	opStore       = "store"
	opAnchor      = "anchor"
	opAcknowledge = "acknowledge"
	opAdmin       = "admin"
	opReady       = "ready"
	opOther       = "other"
)

// opCodes are the problem codes each operation can answer, created at zero
// so that increase() alerts see each series from the first scrape. A code
// not listed is still counted when it happens.
var opCodes = map[string][]fencegate.Code{
	opAcquire: {fencegate.CodeIdentityRequired, fencegate.CodeInvalidRequest, fencegate.CodeUnsupportedMedia, fencegate.CodeBodyTooLarge,
		fencegate.CodePolicyDenied, fencegate.CodeLeaseHeld, fencegate.CodeRequestConflict, fencegate.CodeFenceExhausted,
		fencegate.CodeBackendUnavailable, fencegate.CodeInternal},
	opLookup: {fencegate.CodeIdentityRequired, fencegate.CodeInvalidRequest, fencegate.CodeNotFound, fencegate.CodeBackendUnavailable, fencegate.CodeInternal},
	opRenew: {fencegate.CodeIdentityRequired, fencegate.CodeInvalidRequest, fencegate.CodeUnsupportedMedia, fencegate.CodeBodyTooLarge,
		fencegate.CodeNotOwner, fencegate.CodeNotFound, fencegate.CodeLeaseNotHeld, fencegate.CodePolicyDenied,
		fencegate.CodeBackendUnavailable, fencegate.CodeInternal},
	opRelease:  {fencegate.CodeIdentityRequired, fencegate.CodeInvalidRequest, fencegate.CodeNotOwner, fencegate.CodeNotFound, fencegate.CodeBackendUnavailable, fencegate.CodeInternal},
	opStatus:   {fencegate.CodeIdentityRequired, fencegate.CodeInvalidRequest, fencegate.CodeNotFound, fencegate.CodeBackendUnavailable, fencegate.CodeInternal},
	opResource: {fencegate.CodeIdentityRequired, fencegate.CodeInvalidRequest, fencegate.CodeNotFound, fencegate.CodeBackendUnavailable, fencegate.CodeInternal},
	opAdmin: {fencegate.CodeIdentityRequired, fencegate.CodeAdminRequired, fencegate.CodeInvalidRequest, fencegate.CodeUnsupportedMedia,
		fencegate.CodeBodyTooLarge, fencegate.CodeNotFound, fencegate.CodeBackendUnavailable, fencegate.CodeInternal},
	opStore: {fencegate.CodeIdentityRequired, fencegate.CodeInvalidRequest, fencegate.CodeUnsupportedMedia, fencegate.CodeBodyTooLarge,
		fencegate.CodePolicyDenied, fencegate.CodeNotFound, fencegate.CodeStoreLost, fencegate.CodeMethodNotAllowed,
		fencegate.CodeBackendUnavailable, fencegate.CodeInternal},
	opAnchor: {fencegate.CodeIdentityRequired, fencegate.CodeInvalidRequest, fencegate.CodeUnsupportedMedia, fencegate.CodeBodyTooLarge,
		fencegate.CodePolicyDenied, fencegate.CodeNotFound, fencegate.CodeStoreLost, fencegate.CodeMethodNotAllowed,
		fencegate.CodeBackendUnavailable, fencegate.CodeInternal},
	opAcknowledge: {fencegate.CodeIdentityRequired, fencegate.CodeAdminRequired, fencegate.CodeInvalidRequest, fencegate.CodeUnsupportedMedia,
		fencegate.CodeBodyTooLarge, fencegate.CodeNotFound, fencegate.CodeConflict, fencegate.CodeMethodNotAllowed, fencegate.CodeBackendUnavailable, fencegate.CodeInternal},
	opReady: {fencegate.CodeBackendUnavailable},
	opOther: {fencegate.CodeIdentityRequired, fencegate.CodeNotFound, fencegate.CodeMethodNotAllowed, fencegate.CodeAdminRequired, fencegate.CodeInternal},
}

// newErrorCounter is fencegate_registry_errors_total{op,code}, every
// (op, code) of opCodes at zero.
func newErrorCounter() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fencegate_registry_errors_total",
		Help: "Failed registry API calls by operation (acquire, lookup, renew, release, status, resource, store, anchor, acknowledge, admin, ready, other) and problem code.",
	}, []string{"op", "code"})
	for op, codes := range opCodes {
		for _, code := range codes {
			c.WithLabelValues(op, string(code))
		}
	}
	return c
}

// opOf names the operation a request asks for, from its method and path
// (not from the route matched: a request refused before routing, for want
// of a client certificate, is counted under its operation too).
func opOf(method, path string) string {
	switch {
	case path == "/v1/leases" && method == http.MethodPost:
		return opAcquire
	case strings.HasPrefix(path, "/v1/requests/"):
		return opLookup
	case strings.HasPrefix(path, "/v1/leases/") && strings.HasSuffix(path, "/renew"):
		return opRenew
	case strings.HasPrefix(path, "/v1/leases/") && strings.HasSuffix(path, "/release"):
		return opRelease
	case strings.HasPrefix(path, "/v1/leases/"), strings.HasPrefix(path, "/v1/grants/"):
		return opStatus
	case strings.HasPrefix(path, "/v1/resources/"):
		return opResource
	case strings.HasPrefix(path, "/v1/stores/") && strings.HasSuffix(path, "/progress"):
		return opAnchor
	case strings.HasPrefix(path, "/v1/stores/") && strings.HasSuffix(path, "/acknowledge"):
		return opAcknowledge
	case strings.HasPrefix(path, "/v1/stores/"):
		return opStore
	case strings.HasPrefix(path, "/v1/admin/"):
		return opAdmin
	case path == "/readyz":
		return opReady
	}
	return opOther
}
