package adminapi

import (
	"errors"
	"net/http"

	"go.uber.org/zap"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/authn"
)

// TrustAcceptRequest is the body of POST /v1/trust/accept.
type TrustAcceptRequest struct {
	// Kid is the key of the trust bundle file to pin (required).
	Kid string `json:"kid"`
	// Thumbprint, when given, must be the RFC 7638 thumbprint of the
	// file's key: the operator's check that the file holds the key they
	// mean (compare it with the one the key's owner published).
	Thumbprint string `json:"thumbprint,omitempty"`
	// Reason is kept with the pin and logged.
	Reason string `json:"reason,omitempty"`
}

// trustList answers GET /v1/trust: the bundle file's keys and the pins
// (authn.TrustList).
func (s *server) trustList(w http.ResponseWriter, req *http.Request) {
	list, err := s.Proxy.TrustList(req.Context())
	if err != nil {
		s.Logger.Error("admin: listing the trust pins failed", zap.Error(err))
		problem(w, 503, fencegate.CodeStoreUnavailable, err.Error())
		return
	}
	writeJSON(w, 200, list)
}

// trustAccept answers POST /v1/trust/accept: the operator's controlled
// step that pins a key added to the bundle file (proxy.AcceptTrust).
func (s *server) trustAccept(w http.ResponseWriter, req *http.Request) {
	var b TrustAcceptRequest
	if !decodeBody(w, req, &b) {
		return
	}
	if b.Kid == "" {
		problem(w, 400, fencegate.CodeInvalidRequest, "kid is required")
		return
	}
	out, err := s.Proxy.AcceptTrust(req.Context(), b.Kid, b.Thumbprint, b.Reason)
	switch {
	case errors.Is(err, authn.ErrTrustKeyNotInBundle):
		problem(w, 404, fencegate.CodeNotFound, err.Error())
		return
	case errors.Is(err, authn.ErrTrustThumbprint):
		problem(w, 409, fencegate.CodeConflict, err.Error())
		return
	case err != nil:
		storeProblem(w, err)
		return
	}
	s.Logger.Warn("trust: operator accepted a key of the bundle file", zap.String("kid", b.Kid), zap.String("thumbprint", out.Pin.Thumbprint),
		zap.Bool("trusted", out.Trusted), zap.String("reason", b.Reason))
	writeJSON(w, 200, out)
}
