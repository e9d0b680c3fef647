package store

import (
	"math"
	"time"
)

// Validation limits. Inputs outside them are rejected with an *InputError
// before anything is read or written.
const (
	// MaxResourceLen is the maximum length in bytes of a canonical resource ID.
	MaxResourceLen = 256
	// MaxRootLen is the maximum length in bytes of an operation root.
	MaxRootLen = 256
	// MaxLeaseLen is the maximum length in bytes of a lease ID.
	MaxLeaseLen = 256
	// MaxOperationIDLen is the maximum length of an operation ID
	// (root + "/" + decimal seq).
	MaxOperationIDLen = MaxRootLen + 1 + 20
	// MaxDetailLen is the maximum length in bytes of a pause detail.
	MaxDetailLen = 1024
	// MaxSeq is the highest segment sequence number accepted.
	MaxSeq = math.MaxUint32
	// MaxInFlightWindow is the longest allowed Deadline - Now of a Begin.
	MaxInFlightWindow = 24 * time.Hour

	// DigestPrefix starts every digest: payload and grant digests are
	// DigestPrefix followed by 64 lowercase hex digits (SHA-256).
	DigestPrefix = "sha256:"
	// DigestLen is the exact length of a digest string.
	DigestLen = len(DigestPrefix) + 64

	// MaxResponseHeaders is the maximum number of header values stored with a
	// response (summed over all names).
	MaxResponseHeaders = 32
	// MaxHeaderNameLen is the maximum length of a stored header name.
	MaxHeaderNameLen = 128
	// MaxHeaderValueLen is the maximum length of a stored header value.
	MaxHeaderValueLen = 4096

	// DefaultMaxResponseBody is the default configured limit on a stored
	// response body; longer bodies are cut and marked Truncated.
	DefaultMaxResponseBody = 64 << 10
	// MaxResponseBodyLimit is the largest configurable body limit.
	MaxResponseBodyLimit = 1 << 20
)

// BodyLimit returns the effective stored-body limit for a configured value:
// DefaultMaxResponseBody when n <= 0, MaxResponseBodyLimit when n exceeds it.
func BodyLimit(n int) int {
	switch {
	case n <= 0:
		return DefaultMaxResponseBody
	case n > MaxResponseBodyLimit:
		return MaxResponseBodyLimit
	}
	return n
}
