// Package verify checks lockGrant.v1 grants and lockStatus.v1 status proofs
// against a fixed trust bundle. It does no I/O of its own: callers pass the
// token bytes, the trust bundle and the time.
//
// Verification is strict and named so: ParseAndVerifyGrant and
// ParseAndVerifyStatus enforce a size limit before parsing, an explicit
// algorithm allow-list, a kid that names exactly one key of the bundle whose
// own alg matches the header, the exact schema and typ, every claim present
// and typed, no duplicate JSON members, and integers decoded exactly.
// Every failure is a *Error whose Code maps one-to-one to the DESIGN error
// codes (GRANT_INVALID, STATUS_STALE, ...), and wraps one of the sentinel
// errors in errors.go.
package verify
