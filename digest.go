package fencegate

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// DigestPrefix starts every digest of the contract: grant digests, payload
// digests and operation roots are DigestPrefix followed by 64 lowercase hex
// digits (SHA-256).
const DigestPrefix = "sha256:"

// DigestLen is the exact length of a digest string.
const DigestLen = len(DigestPrefix) + 64

// Digest returns the digest of b: DigestPrefix + hex SHA-256.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return DigestPrefix + hex.EncodeToString(sum[:])
}

// ValidateDigest checks a digest: DigestPrefix followed by 64 lowercase hex
// digits, nothing else. Errors wrap ErrInvalidDigest.
func ValidateDigest(d string) error {
	if len(d) != DigestLen || d[:len(DigestPrefix)] != DigestPrefix {
		return fmt.Errorf("%w: want %s followed by 64 lowercase hex digits", ErrInvalidDigest, DigestPrefix)
	}
	for i := len(DigestPrefix); i < len(d); i++ {
		if c := d[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return fmt.Errorf("%w: want %s followed by 64 lowercase hex digits", ErrInvalidDigest, DigestPrefix)
		}
	}
	return nil
}
