package verify

import "github.com/fencegate/fencegate"

// ParseAndVerifyGrant authenticates a lockGrant.v1 compact JWS against the
// trust bundle b and returns its claims and its grantDigest (see fencegate.Digest).
//
// Checks, in this order, each failing with code GRANT_INVALID and the reason
// sentinel in brackets:
//
//  1. the size limit, before anything is parsed (MaxTokenBytes by default,
//     see WithMaxTokenBytes) [ErrOversized];
//  2. the compact form: exactly three segments of canonical, unpadded
//     base64url, no whitespace or other bytes, header and payload
//     non-empty (detached payloads are not supported) [ErrMalformed];
//  3. the protected header: one JSON object [ErrMalformed] without
//     duplicate members [ErrDuplicateMember] and with no member other than
//     alg, kid and typ, so no "crit" and no header-supplied keys ("jwk",
//     "jku", "x5u", "x5c", ...) [ErrForbiddenHeader];
//  4. alg present and in the bundle's allow-list, which never includes
//     "none" [ErrAlgNotAllowed];
//  5. kid present and naming a key of the bundle [ErrUnknownKid];
//  6. alg equal to that key's own alg, so an HS256 token cannot borrow the
//     kid of an EdDSA or ES256 key [ErrAlgNotAllowed];
//  7. typ exactly "lockGrant.v1" [ErrWrongSchema];
//  8. the signature, verified with exactly that one key and alg over the
//     signing input as sent (an ES256 signature must be exactly 64 bytes,
//     r||s); keys are never taken from the token [ErrBadSignature];
//  9. the payload: one flat JSON object in valid UTF-8 [ErrMalformed],
//     without duplicate members [ErrDuplicateMember], with schema exactly
//     "lockGrant.v1" [ErrWrongSchema], no member that is not a fencegate.Grant claim
//     (unknown claims are rejected, not ignored) [ErrUnknownClaim], every
//     claim present but the optional "lineage" [ErrMissingClaim], strings
//     as non-empty JSON strings [ErrClaimType, ErrEmptyClaim], integers as
//     plain JSON integers in [0, 2^64-1] decoded exactly, never through
//     float64, so no sign, fraction or exponent [ErrClaimType], and
//     fenceToken >= 1 and ttlMs >= 1 [ErrClaimType]; "lineage", when
//     present, a JSON string of 1..64 bytes of [0-9a-z]
//     (fencegate.ValidateLineage) [ErrClaimType, ErrEmptyClaim]: absent is
//     accepted as fencegate.Grant.Lineage "" (a grant of a registry older than the
//     claim), anything else is refused.
//
// The grant's owner, resource, epoch and state are not checked here; see
// CheckBinding, CheckEpoch and CheckStatus. On error the returned grant is
// nil and the digest empty; the error is always a *Error.
func ParseAndVerifyGrant(token []byte, b *Bundle, opts ...Option) (*fencegate.Grant, string, error) {
	payload, e := verifyCompact(token, b, fencegate.GrantSchema, buildOptions(opts))
	if e != nil {
		return nil, "", e
	}
	g := new(fencegate.Grant)
	if e := decodeClaims(payload, fencegate.GrantSchema, grantClaims(g)); e != nil {
		return nil, "", e
	}
	g.Schema = fencegate.GrantSchema
	if g.FenceToken < 1 {
		return nil, "", invalid(ErrClaimType, "claim \"fenceToken\" must be >= 1")
	}
	if g.TTLMs < 1 {
		return nil, "", invalid(ErrClaimType, "claim \"ttlMs\" must be >= 1")
	}
	return g, fencegate.Digest(token), nil
}

func grantClaims(g *fencegate.Grant) []claim {
	return []claim{
		{name: "schema", str: &g.Schema},
		{name: "iss", str: &g.Issuer},
		{name: "grantId", str: &g.GrantID},
		{name: "resource", str: &g.Resource},
		{name: "owner", str: &g.Owner},
		{name: "requestId", str: &g.RequestID},
		{name: "lease", str: &g.Lease},
		{name: "operationRoot", str: &g.OperationRoot},
		{name: "fenceToken", num: &g.FenceToken},
		{name: "backendRevision", num: &g.BackendRevision},
		{name: "policyGeneration", num: &g.PolicyGeneration},
		{name: "issuerEpoch", num: &g.IssuerEpoch},
		{name: "ttlMs", num: &g.TTLMs},
		{name: "opClass", str: &g.OpClass},
		{name: "iat", num: &g.IssuedAt},
		{name: "lineage", str: &g.Lineage, optional: true, domain: fencegate.ValidateLineage},
	}
}
