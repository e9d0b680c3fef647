package store

import "time"

// Validation limits. Inputs outside them are rejected with an *InputError
// before anything is read or written. The limits of the contract (resource
// IDs, operation roots and IDs, segment numbers, digests) are the root
// package's: fencegate.MaxResourceLen, MaxRootLen, MaxOperationIDLen,
// MaxSeq, DigestLen.
const (
	// MaxLeaseLen is the maximum length in bytes of a lease ID.
	MaxLeaseLen = 256
	// MaxDetailLen is the maximum length in bytes of a pause detail.
	MaxDetailLen = 1024
	// MaxInFlightWindow is the longest allowed Deadline - Now of a Begin.
	MaxInFlightWindow = 24 * time.Hour
	// MaxPriorLineages is the number of earlier issuer lineages a record
	// keeps (Record.PriorLineages); older ones are dropped.
	MaxPriorLineages = 8

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
