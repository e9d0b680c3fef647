package campaign

import (
	"errors"
	"time"

	"github.com/fencegate/fencegate"
	"github.com/fencegate/fencegate/verify"
)

// Tuple is what a request puts before a sidecar's acceptance checks.
type Tuple struct {
	// Grant is the Fence-Grant header value (a lockGrant.v1 compact JWS).
	Grant []byte
	// Proof is the Fence-Status header value (a lockStatus.v1 compact JWS).
	Proof []byte
	// Resource is the route's canonical resource.
	Resource string
	// Owner is the caller's workload identity.
	Owner string
}

// Checker decides whether a sidecar would accept a tuple: nil means
// accepted, any error a rejection. Tests replace the Sidecar with a
// deliberately weakened Checker to show that the campaign detects a hole.
// A Checker must be safe for concurrent use.
type Checker interface {
	Check(t Tuple) error
}

// Sidecar is the acceptance path of a proof-mode route of package proxy,
// rebuilt from the public verify API in the proxy's order (see the package
// documentation). Its time is fixed, so its verdicts are reproducible.
type Sidecar struct {
	// Bundle is the trust bundle (trust.bundle, with trust.allowHS256).
	Bundle *verify.Bundle
	// Options are the verify options (trust.maxTokenBytes).
	Options []verify.Option
	// MaxAge is the route's status.maxAge.
	MaxAge time.Duration
	// ClockSkew is trust.clockSkew.
	ClockSkew time.Duration
	// MinIssuerEpoch is trust.minIssuerEpoch.
	MinIssuerEpoch uint64
	// SeenEpoch is the highest issuer epoch the sidecar has learned from
	// proofs it verified before.
	SeenEpoch uint64
	// Now is the sidecar's time.
	Now time.Time
}

// Check runs the sidecar's checks on t, in the proxy's order.
func (s *Sidecar) Check(t Tuple) error {
	if len(t.Grant) == 0 {
		return &Rejection{Code: fencegate.CodeGrantRequired, Detail: "no Fence-Grant"}
	}
	g, digest, err := verify.ParseAndVerifyGrant(t.Grant, s.Bundle, s.Options...)
	if err != nil {
		return err
	}
	if err := verify.CheckBinding(g, t.Resource, t.Owner); err != nil {
		return err
	}
	if len(t.Proof) == 0 {
		return &Rejection{Code: fencegate.CodeStatusStale, Detail: "this route needs a Fence-Status proof"}
	}
	st, err := verify.ParseAndVerifyStatus(t.Proof, s.Bundle, s.Options...)
	if err != nil {
		return err
	}
	// The proxy learns the proof's epoch before it builds the policy.
	pol := verify.StatusPolicy{
		MaxAge:         s.MaxAge,
		ClockSkew:      s.ClockSkew,
		MinIssuerEpoch: max(s.MinIssuerEpoch, s.SeenEpoch, st.IssuerEpoch),
	}
	return verify.CheckStatus(st, g, digest, s.Now, pol)
}

// Unclassified is the code counted for a rejection that carries no code (a
// Checker returning a plain error).
const Unclassified fencegate.Code = "UNCLASSIFIED"

// codeOf returns the rejection code of err and its finer reason (the
// verify reason sentinel's text, or "" when there is none).
func codeOf(err error) (fencegate.Code, string) {
	var ve *verify.Error
	if errors.As(err, &ve) {
		reason := ""
		if ve.Reason != nil {
			reason = ve.Reason.Error()
		}
		return ve.Code, reason
	}
	var r *Rejection
	if errors.As(err, &r) {
		return r.Code, ""
	}
	return Unclassified, ""
}
