package fencegate

// Names of the JWS algorithms a fencegate key can have (the JOSE "alg"
// values). Package verify owns verification and maps them to its
// algorithm type; package keys generates keys for them.
const (
	// AlgEdDSA is EdDSA with an Ed25519 key.
	AlgEdDSA = "EdDSA"
	// AlgES256 is ECDSA with a P-256 key and SHA-256.
	AlgES256 = "ES256"
	// AlgHS256 is HMAC-SHA256 with a shared secret: whoever verifies with
	// it can forge grants, so it is never allowed by default.
	AlgHS256 = "HS256"
)

// Algorithms returns every algorithm a key can have: EdDSA, ES256, HS256.
// No other algorithm can be allowed, for signing or for verifying.
func Algorithms() []string { return []string{AlgEdDSA, AlgES256, AlgHS256} }

// DefaultAlgorithms returns the verification allow-list when none is
// configured: EdDSA and ES256. HS256 is allowed only explicitly.
func DefaultAlgorithms() []string { return []string{AlgEdDSA, AlgES256} }
