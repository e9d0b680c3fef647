// Package keys creates, stores and loads signing keys, signs grants,
// status proofs and trust bundles with them (Signer, SignBundle) and
// builds trust bundles (JWK sets) from them.
//
// A signing key is a private JWK with "kid" and "alg" set (EdDSA with
// Ed25519, ES256 with P-256, or HS256 with a 256-bit shared secret). A trust
// bundle is a JWK set: the public halves of the asymmetric keys, and for
// HS256 the shared secret itself, which is why an HS256 bundle must be kept
// as secret as the signing key and is never published on
// /.well-known/jwks.json.
//
// Signer builds EdDSA and HS256 tokens itself (compact.go: the bytes jwx
// would build, without its generic header handling, which cost a third of
// a signature on the registry's acquire path) and ES256 ones through jwx.
//
// The registry signs with it, the fencegate keys subcommand manages key
// files with it and verify/verifytest mints real tokens with it. It
// imports only the root package (the contract: schema names, algorithm
// names, MaxBundleKeys) and jwx, so none of them compiles the registry.
package keys
