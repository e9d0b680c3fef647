// Package keys creates, stores and loads the registry's signing keys and
// builds trust bundles (JWK sets) from them.
//
// A signing key is a private JWK with "kid" and "alg" set (EdDSA with
// Ed25519, ES256 with P-256, or HS256 with a 256-bit shared secret). A trust
// bundle is a JWK set: the public halves of the asymmetric keys, and for
// HS256 the shared secret itself, which is why an HS256 bundle must be kept
// as secret as the signing key and is never published on
// /.well-known/jwks.json.
package keys
