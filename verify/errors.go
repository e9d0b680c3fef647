package verify

import (
	"errors"

	"github.com/fencegate/fencegate"
)

// Code sentinels: every *Error unwraps to exactly one of them (the one for
// its Code), so callers can test errors.Is(err, verify.ErrGrantInvalid) or,
// the same, errors.Is(err, fencegate.CodeGrantInvalid): each sentinel is
// the fencegate.Code itself (a Code is an error). The codes verify
// produces are GRANT_INVALID, OWNER_MISMATCH, RESOURCE_MISMATCH,
// POLICY_MISMATCH, GRANT_NOT_HELD, EPOCH_REVOKED and STATUS_STALE.
var (
	// ErrGrantInvalid is the sentinel for fencegate.CodeGrantInvalid.
	ErrGrantInvalid error = fencegate.CodeGrantInvalid
	// ErrOwnerMismatch is the sentinel for fencegate.CodeOwnerMismatch.
	ErrOwnerMismatch error = fencegate.CodeOwnerMismatch
	// ErrResourceMismatch is the sentinel for fencegate.CodeResourceMismatch.
	ErrResourceMismatch error = fencegate.CodeResourceMismatch
	// ErrPolicyMismatch is the sentinel for fencegate.CodePolicyMismatch.
	ErrPolicyMismatch error = fencegate.CodePolicyMismatch
	// ErrGrantNotHeld is the sentinel for fencegate.CodeGrantNotHeld.
	ErrGrantNotHeld error = fencegate.CodeGrantNotHeld
	// ErrEpochRevoked is the sentinel for fencegate.CodeEpochRevoked.
	ErrEpochRevoked error = fencegate.CodeEpochRevoked
	// ErrStatusStale is the sentinel for fencegate.CodeStatusStale.
	ErrStatusStale error = fencegate.CodeStatusStale
)

// Reason sentinels: the finer cause of a rejection. An *Error unwraps to one
// of them as well as to its code sentinel. Where a check has no finer cause
// (OWNER_MISMATCH, RESOURCE_MISMATCH, POLICY_MISMATCH, EPOCH_REVOKED,
// GRANT_NOT_HELD) the reason is the code sentinel itself.
var (
	// ErrOversized: the token is longer than the size limit. Checked before
	// anything else is parsed.
	ErrOversized = errors.New("token too large")
	// ErrMalformed: not a compact JWS (not exactly three dot-separated
	// segments, an empty header or payload segment, a byte outside the
	// base64url alphabet, whitespace, padding or non-canonical base64url;
	// an empty signature segment is left to the alg and signature checks),
	// a header or payload
	// that is not valid UTF-8 JSON, not a single JSON object, truncated, has
	// trailing data, or a header member of the wrong JSON type. Also used
	// for a nil grant or proof handed to a check.
	ErrMalformed = errors.New("malformed token")
	// ErrDuplicateMember: a JSON member name occurs twice in the protected
	// header or in the payload.
	ErrDuplicateMember = errors.New("duplicate JSON member")
	// ErrMissingClaim: a required claim is absent.
	ErrMissingClaim = errors.New("missing claim")
	// ErrUnknownClaim: the payload has a member that is not a claim of the
	// schema. Unknown members are rejected, not ignored.
	ErrUnknownClaim = errors.New("unknown claim")
	// ErrClaimType: a claim has the wrong JSON type (including null), or an
	// integer claim is negative, fractional, in exponent form or above the
	// uint64 maximum, or a claim value is outside its domain (fenceToken or
	// ttlMs of 0, an unknown state, exp not after iat, a grantDigest that is
	// not "sha256:" + 64 lowercase hex digits).
	ErrClaimType = errors.New("claim of wrong type or out of range")
	// ErrEmptyClaim: a required string claim is the empty string.
	ErrEmptyClaim = errors.New("empty claim")
	// ErrUnknownKid: the header has no kid, or a kid that names no key of
	// the trust bundle.
	ErrUnknownKid = errors.New("unknown kid")
	// ErrAlgNotAllowed: the header alg is absent, "none", not in the
	// bundle's allow-list, or not the alg of the key named by kid (alg
	// confusion, e.g. HS256 with the kid of an EdDSA or ES256 key). Also
	// returned by NewBundle for a key whose alg is not allowed.
	ErrAlgNotAllowed = errors.New("algorithm not allowed")
	// ErrForbiddenHeader: the protected header has a member other than alg,
	// kid and typ: "crit", header-supplied keys ("jwk", "jku", "x5u",
	// "x5c", ...), "b64" or anything else. Keys come only from the bundle.
	ErrForbiddenHeader = errors.New("header member not allowed")
	// ErrBadSignature: the signature does not verify with the key named by kid.
	ErrBadSignature = errors.New("bad signature")
	// ErrWrongSchema: the typ header is absent or not exactly the expected
	// schema name, or the schema claim is not exactly it.
	ErrWrongSchema = errors.New("wrong schema")

	// ErrProofMismatch: the status proof is for another grant: its
	// grantDigest, resource, lease or fenceToken differs from the grant's.
	ErrProofMismatch = errors.New("status proof not for this grant")
	// ErrProofExpired: now is at or after the proof's exp.
	ErrProofExpired = errors.New("status proof expired")
	// ErrProofTooOld: the proof was issued longer than StatusPolicy.MaxAge ago.
	ErrProofTooOld = errors.New("status proof too old")
	// ErrProofFromFuture: the proof's iat is later than now plus
	// StatusPolicy.ClockSkew.
	ErrProofFromFuture = errors.New("status proof issued in the future")
	// ErrInvalidPolicy: the StatusPolicy handed to CheckStatus is unusable
	// (MaxAge <= 0 or ClockSkew < 0). CheckStatus fails closed with
	// STATUS_STALE; validate policies at configuration time with
	// StatusPolicy.Validate.
	ErrInvalidPolicy = errors.New("invalid status policy")

	// ErrBadBundle is returned by NewBundle for an unusable trust bundle.
	ErrBadBundle = errors.New("verify: unusable trust bundle")
)

// Error is the error returned by every verification function of this
// package. It unwraps to both the sentinel for Code and to Reason.
type Error struct {
	// Code is the stable rejection code.
	Code fencegate.Code
	// Reason is the fine reason sentinel (ErrUnknownKid, ErrProofExpired, ...),
	// or the code sentinel when there is no finer reason.
	Reason error
	// Detail is a human-readable explanation. It may quote header or claim
	// values and is meant for logs and problem details, not for matching.
	Detail string
}

// Error returns "verify: CODE: detail".
func (e *Error) Error() string {
	d := e.Detail
	if d == "" && e.Reason != nil {
		d = e.Reason.Error()
	}
	return "verify: " + string(e.Code) + ": " + d
}

// Unwrap returns the code sentinel (the fencegate.Code) and the reason
// sentinel.
func (e *Error) Unwrap() []error {
	errs := make([]error, 0, 2)
	if e.Code != "" {
		errs = append(errs, e.Code)
	}
	if e.Reason != nil {
		errs = append(errs, e.Reason)
	}
	return errs
}

// CodeOf returns the Code of the first *Error in err's chain, or "" when err
// is nil or carries no verify code.
func CodeOf(err error) fencegate.Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func newErr(code fencegate.Code, reason error, detail string) *Error {
	return &Error{Code: code, Reason: reason, Detail: detail}
}

func invalid(reason error, detail string) *Error {
	return newErr(fencegate.CodeGrantInvalid, reason, detail)
}
