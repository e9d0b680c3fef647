package fencegate

import "errors"

// Sentinels of the contract's validators. Every error they return wraps
// exactly one of them.
var (
	// ErrInvalidSegment: a segment number is not a decimal integer in 1..MaxSeq.
	ErrInvalidSegment = errors.New("fencegate: invalid segment")
	// ErrInvalidOperationID: an operation ID is not root "/" seq, or an
	// operation root is empty, too long or holds a control character.
	ErrInvalidOperationID = errors.New("fencegate: invalid operation ID")
	// ErrInvalidDigest: a digest is not "sha256:" + 64 lowercase hex digits.
	ErrInvalidDigest = errors.New("fencegate: invalid digest")
	// ErrInvalidResource: a resource ID breaks the rule of ValidateResource.
	ErrInvalidResource = errors.New("fencegate: invalid resource")
)
