package fencegate

// Schema names: each is carried in the JWS "typ" header and in the
// "schema" claim (or member) of its token, so no token can be taken for
// another kind.
const (
	// GrantSchema is the schema of a grant (claim set Grant).
	GrantSchema = "lockGrant.v1"
	// StatusSchema is the schema of a status proof (claim set Status).
	StatusSchema = "lockStatus.v1"
	// BundleSchema is the schema of a signed trust bundle: a compact JWS
	// whose payload is a JWK set with its issue and expiry times, signed
	// by a key the verifier already trusts.
	BundleSchema = "fencegateBundle.v1"
)

// MaxBundleKeys is the most keys a signed trust bundle may carry (the most
// a sidecar pins, store.MaxTrustedKeys).
const MaxBundleKeys = 64
