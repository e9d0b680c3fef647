// Package verify checks lockGrant.v1 grants and lockStatus.v1 status proofs
// against a fixed trust bundle: applyFencedMutation steps 2 and 3. It does no
// I/O of its own, keeps no global state and reads no clock: callers pass the
// token bytes, the trust bundle and the time.
//
// A Bundle (NewBundle) is an immutable set of verification keys by kid, each
// bound to one algorithm, with an explicit algorithm allow-list (EdDSA and
// ES256 by default; HS256 only when allowed explicitly). Reload by building
// a new Bundle.
//
// Verification is strict and named so. ParseAndVerifyGrant and
// ParseAndVerifyStatus enforce a size limit before parsing; the compact JWS
// form with canonical base64url; a protected header with exactly alg, kid
// and typ (no "crit", no header-supplied keys, no duplicate members); an alg
// in the allow-list; a kid that names exactly one key of the bundle whose
// own alg matches the header; the exact typ; the signature with that one
// key and alg (the standard library's Ed25519, ECDSA P-256 or HMAC-SHA256
// over the segments already split, which is what jws.Verify computes,
// without parsing the token a second time); then the payload: a JSON object with exactly the
// schema's claims (unknown claims are rejected), the exact schema, no
// duplicate members, non-empty strings and integers decoded exactly as
// uint64 (never through float64, so fence tokens above 2^53 are exact).
//
// The remaining checks take verified claims: CheckBinding (route resource
// and caller identity against the grant), CheckEpoch (revoked issuer
// epochs) and CheckStatus (a proof is for this grant, fresh, HELD, of the
// current issuer epoch and policy generation). Each documents its order.
//
// A signed trust bundle (fencegateBundle.v1: a compact JWS whose payload is
// a JWK set with its schema, iat and exp) is checked the same way by
// ParseAndVerifySignedBundle, against the keys allowed to sign one (a
// sidecar's pinned keys): size limit (MaxSignedBundleBytes), compact form,
// strict header, allow-list, kid, alg, exact typ, signature, then a strict
// payload. CheckBundleTime checks its exp and iat. ParseSignedBundleUnverified
// reads one without authenticating it, for the sidecar to find the key
// material of a pinned key by its thumbprint. Their errors are *BundleError
// (unwrapping to ErrBadSignedBundle and the same reason sentinels).
//
// The claim sets it decodes into (fencegate.Grant, fencegate.Status), the
// schema names and the lease states are the contract's, in the root
// package; verify only checks them.
//
// Every failure of a grant or a proof is a *Error whose Code is one of the contract's rejection codes
// (GRANT_INVALID, OWNER_MISMATCH, RESOURCE_MISMATCH, POLICY_MISMATCH,
// GRANT_NOT_HELD, EPOCH_REVOKED, STATUS_STALE) and which unwraps both to that
// code's sentinel (ErrGrantInvalid, ..., each the fencegate.Code itself, so
// errors.Is(err, fencegate.CodeGrantInvalid) matches too) and to a finer
// reason sentinel (ErrUnknownKid, ErrProofExpired, ...); see errors.go.
// Package verifytest has helpers to issue real tokens in other packages'
// tests. Nothing here imports the registry, the sidecar or the store.
package verify
