package keys

import "errors"

var (
	// ErrUnsupportedAlg is returned for an algorithm other than EdDSA, ES256 or HS256.
	ErrUnsupportedAlg = errors.New("keys: unsupported algorithm")
	// ErrBadKey is returned when a key file cannot be used for signing:
	// not a private key, no kid, no alg, or an alg that does not fit the key type.
	ErrBadKey = errors.New("keys: unusable key")
)
