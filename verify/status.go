package verify

import (
	"fmt"
	"math"
	"time"

	"github.com/fencegate/fencegate"
)

// ParseAndVerifyStatus authenticates a lockStatus.v1 compact JWS against the
// trust bundle b and returns its claims. It applies the same checks, in the
// same order and with the same reasons, as ParseAndVerifyGrant, with typ and
// schema "lockStatus.v1" and the fencegate.Status claims; an authentication or
// parsing failure of a proof is code GRANT_INVALID. On top of that, with
// reason ErrClaimType: fenceToken >= 1, state one of HELD, EXPIRED,
// RELEASED, REVOKED, exp > iat, and grantDigest of the form "sha256:" + 64
// lowercase hex digits.
//
// A verified proof says nothing yet about the grant at hand: pass it to
// CheckStatus. On error the returned proof is nil; the error is always a
// *Error.
func ParseAndVerifyStatus(token []byte, b *Bundle, opts ...Option) (*fencegate.Status, error) {
	payload, e := verifyCompact(token, b, fencegate.StatusSchema, buildOptions(opts))
	if e != nil {
		return nil, e
	}
	st := new(fencegate.Status)
	if e := decodeClaims(payload, fencegate.StatusSchema, statusClaims(st)); e != nil {
		return nil, e
	}
	st.Schema = fencegate.StatusSchema
	switch {
	case st.FenceToken < 1:
		return nil, invalid(ErrClaimType, `claim "fenceToken" must be >= 1`)
	case !validState(st.State):
		return nil, invalid(ErrClaimType, fmt.Sprintf("claim \"state\" is %q, want HELD, EXPIRED, RELEASED or REVOKED", st.State))
	case st.ExpiresAt <= st.IssuedAt:
		return nil, invalid(ErrClaimType, `claim "exp" must be after "iat"`)
	case fencegate.ValidateDigest(st.GrantDigest) != nil:
		return nil, invalid(ErrClaimType, `claim "grantDigest" is not "sha256:" + 64 lowercase hex digits`)
	}
	return st, nil
}

func statusClaims(st *fencegate.Status) []claim {
	return []claim{
		{name: "schema", str: &st.Schema},
		{name: "iss", str: &st.Issuer},
		{name: "grantDigest", str: &st.GrantDigest},
		{name: "resource", str: &st.Resource},
		{name: "lease", str: &st.Lease},
		{name: "fenceToken", num: &st.FenceToken},
		{name: "state", str: &st.State},
		{name: "backendRevision", num: &st.BackendRevision},
		{name: "policyGeneration", num: &st.PolicyGeneration},
		{name: "issuerEpoch", num: &st.IssuerEpoch},
		{name: "iat", num: &st.IssuedAt},
		{name: "exp", num: &st.ExpiresAt},
	}
}

func validState(s string) bool {
	switch s {
	case fencegate.StateHeld, fencegate.StateExpired, fencegate.StateReleased, fencegate.StateRevoked:
		return true
	}
	return false
}

// StatusPolicy says how fresh and how current a status proof must be.
type StatusPolicy struct {
	// MaxAge is the oldest a proof may be (now - iat). Required, > 0.
	MaxAge time.Duration
	// ClockSkew is how far in the future a proof's iat may be, to absorb
	// clock differences with the registry. 0 (the default) allows none.
	// Must not be negative.
	ClockSkew time.Duration
	// MinIssuerEpoch is the lowest issuer epoch still trusted: grants of a
	// lower epoch are revoked (EPOCH_REVOKED). 0 revokes nothing.
	MinIssuerEpoch uint64
	// NotBefore is a lower bound on the current time that the caller
	// learned elsewhere (the sidecar: from the registry's own proofs, so a
	// verifier whose clock lags the registry's by more than ClockSkew
	// still sees a proof's window close on time). Expiry and age (checks 3
	// and 4) are judged at the later of now and NotBefore; the check that
	// iat is not in the future (5) keeps now, so NotBefore only ever
	// refuses more. Zero: none.
	NotBefore time.Time
}

// Validate reports whether p can be used; the error wraps ErrInvalidPolicy.
// Call it when loading configuration.
func (p StatusPolicy) Validate() error {
	if p.MaxAge <= 0 {
		return fmt.Errorf("verify: %w: MaxAge must be > 0, got %s", ErrInvalidPolicy, p.MaxAge)
	}
	if p.ClockSkew < 0 {
		return fmt.Errorf("verify: %w: ClockSkew must be >= 0, got %s", ErrInvalidPolicy, p.ClockSkew)
	}
	return nil
}

// CheckStatus decides whether the verified proof st shows that the verified
// grant g, whose grantDigest is digest, is currently held, at time now.
// Checks, in this order (code, reason):
//
//  1. nil st or g (GRANT_INVALID, ErrMalformed); p fails Validate
//     (STATUS_STALE, ErrInvalidPolicy) — fail closed;
//  2. the proof is for this grant: st.GrantDigest == digest (non-empty), and
//     resource, lease and fenceToken equal the grant's
//     (STATUS_STALE, ErrProofMismatch);
//  3. now < exp (STATUS_STALE, ErrProofExpired), where now is the later
//     of now and p.NotBefore, as in 4;
//  4. now - iat <= p.MaxAge (STATUS_STALE, ErrProofTooOld);
//  5. iat <= now + p.ClockSkew (STATUS_STALE, ErrProofFromFuture), with
//     now itself;
//  6. g.IssuerEpoch >= p.MinIssuerEpoch and st.IssuerEpoch == g.IssuerEpoch
//     (EPOCH_REVOKED, ErrEpochRevoked);
//  7. st.PolicyGeneration == g.PolicyGeneration
//     (POLICY_MISMATCH, ErrPolicyMismatch);
//  8. state is HELD; EXPIRED, RELEASED and REVOKED all fail
//     (GRANT_NOT_HELD, ErrGrantNotHeld).
//
// Epoch and policy come before state because the registry reports a grant
// revoked by an epoch bump or a policy change as REVOKED, together with the
// current epoch and generation: the caller gets the precise reason.
//
// Times are compared in Unix milliseconds; a now before 1970 counts as 0.
// The proof's iss and backendRevision are not compared with the grant's.
func CheckStatus(st *fencegate.Status, g *fencegate.Grant, digest string, now time.Time, p StatusPolicy) error {
	if st == nil || g == nil {
		return invalid(ErrMalformed, "nil status proof or grant")
	}
	if err := p.Validate(); err != nil {
		return newErr(fencegate.CodeStatusStale, ErrInvalidPolicy, err.Error())
	}
	switch {
	case digest == "" || st.GrantDigest != digest:
		return newErr(fencegate.CodeStatusStale, ErrProofMismatch, fmt.Sprintf("proof is for grant %s, not %s", st.GrantDigest, digest))
	case st.Resource != g.Resource:
		return newErr(fencegate.CodeStatusStale, ErrProofMismatch, fmt.Sprintf("proof is for resource %q, not %q", st.Resource, g.Resource))
	case st.Lease != g.Lease:
		return newErr(fencegate.CodeStatusStale, ErrProofMismatch, fmt.Sprintf("proof is for lease %q, not %q", st.Lease, g.Lease))
	case st.FenceToken != g.FenceToken:
		return newErr(fencegate.CodeStatusStale, ErrProofMismatch, fmt.Sprintf("proof is for fence %d, not %d", st.FenceToken, g.FenceToken))
	}

	nowMs := unixMs(now)
	// Expiry and age at the later of now and what the caller learned.
	lateMs := max(nowMs, unixMs(p.NotBefore))
	maxAgeMs := uint64(p.MaxAge / time.Millisecond)
	skewMs := uint64(p.ClockSkew / time.Millisecond)
	switch {
	case lateMs >= st.ExpiresAt:
		return newErr(fencegate.CodeStatusStale, ErrProofExpired, fmt.Sprintf("proof expired at %d, now %d", st.ExpiresAt, lateMs))
	case lateMs > st.IssuedAt && lateMs-st.IssuedAt > maxAgeMs:
		return newErr(fencegate.CodeStatusStale, ErrProofTooOld, fmt.Sprintf("proof issued at %d is %dms old, max %s", st.IssuedAt, lateMs-st.IssuedAt, p.MaxAge))
	case st.IssuedAt > satAdd(nowMs, skewMs):
		return newErr(fencegate.CodeStatusStale, ErrProofFromFuture, fmt.Sprintf("proof issued at %d, after now %d + skew %s", st.IssuedAt, nowMs, p.ClockSkew))
	}

	// Epoch and policy before state: the registry reports a grant revoked by
	// an epoch bump or a policy change as REVOKED, and the caller deserves
	// the precise reason.
	if e := checkEpoch(g, p.MinIssuerEpoch); e != nil {
		return e
	}
	if st.IssuerEpoch != g.IssuerEpoch {
		return newErr(fencegate.CodeEpochRevoked, ErrEpochRevoked, fmt.Sprintf("grant issuer epoch %d, current %d", g.IssuerEpoch, st.IssuerEpoch))
	}
	if st.PolicyGeneration != g.PolicyGeneration {
		return newErr(fencegate.CodePolicyMismatch, ErrPolicyMismatch, fmt.Sprintf("grant policy generation %d, current %d", g.PolicyGeneration, st.PolicyGeneration))
	}
	if st.State != fencegate.StateHeld {
		return newErr(fencegate.CodeGrantNotHeld, ErrGrantNotHeld, fmt.Sprintf("registry reports the grant %s", st.State))
	}
	return nil
}

func satAdd(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

// unixMs is t in Unix milliseconds; before 1970 (or zero) it counts as 0.
func unixMs(t time.Time) uint64 {
	if ms := t.UnixMilli(); ms > 0 {
		return uint64(ms)
	}
	return 0
}
