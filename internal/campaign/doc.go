// Package campaign is the grant and proof mutation campaign: it derives
// mutated lockGrant.v1 grants and lockStatus.v1 proofs from real, validly
// signed ones and pushes every mutation through the acceptance checks a
// sidecar applies before it touches its store. The campaign passes when no
// mutation is accepted.
//
// # What is checked
//
// A mutation is a Tuple: the Fence-Grant token, the Fence-Status proof, the
// route's canonical resource and the caller's owner identity. Sidecar (the
// default Checker) mirrors a proof-mode route of package proxy with the
// public verify API, in the proxy's order: an empty grant is
// GRANT_REQUIRED; verify.ParseAndVerifyGrant; verify.CheckBinding; an empty
// proof is STATUS_STALE; verify.ParseAndVerifyStatus; then verify.CheckStatus
// with the sidecar's StatusPolicy, whose minimum epoch is the larger of
// trust.minIssuerEpoch, the highest epoch the sidecar has learned and the
// epoch of the proof at hand (the proxy learns it before the check).
// "Accepted" means the tuple passes all of these.
//
// The sidecar under test is the most permissive legitimate configuration:
// HS256 allowed, and a trust bundle with four keys (the signing Ed25519
// key, a second Ed25519 key of a rotation, an ES256 key and an HS256
// secret). Removing keys or algorithms can only turn an acceptance into a
// rejection, so a campaign that passes here passes for every narrower
// configuration.
//
// Registry-mode routes, the ended-grant memory and the store's input
// validation are out of scope: the first two depend on registry answers an
// attacker does not forge, the last validates well-formed claims, not
// authenticity.
//
// # Generation
//
// NewFixture builds, deterministically from the seed, the keys and six
// original tuples whose grants and proofs are made by the registry's own
// code (registry.GrantClaims, registry.ProofClaims, keys.Signer): every
// original is accepted. Each kind (Kinds) is a named generator that derives
// one mutation from an original. Mutations that must test the claim checks
// and not only the signature (expired, revoked-epoch, stale-policy,
// wrong-resource, duplicate-members, huge-numbers, ...) are signed with the
// trusted signing key, and a grant re-signed with other claims gets a
// proof re-signed for its new digest, so the check under test is reached.
//
// Mutation i uses kind i mod len(kinds) and an RNG seeded from (seed, i)
// (math/rand/v2 PCG), so a run's counts depend on the seed, N and the kinds
// only, never on the number of workers or their scheduling.
//
// A mutation whose decoded header, payload and signature bytes (and route
// resource and owner) equal its original's is semantically the original:
// it is counted as equivalent, neither accepted nor rejected. Base64url
// decoding for that comparison is lenient (non-zero padding bits are
// ignored), so a bit flip in the padding bits of a segment is equivalent
// even though verify, which demands canonical base64url, rejects it.
//
// A panic of a check is recorded as a failure of the campaign, never
// silently recovered into a rejection.
//
// # Where it runs
//
// The fencegate campaign subcommand (cmd/fencegate, run in full by
// .ci/soak) and this package's tests drive it. It is internal and sits
// above the registry: it issues its originals with the registry's code,
// which package verify, the pure verifier it attacks, must never import.
package campaign
