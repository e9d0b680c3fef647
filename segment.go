package fencegate

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of segments and operation IDs.
const (
	// MaxSeq is the highest segment number: the highest the fenced store
	// accepts, and so the highest the sidecar and the SDK accept.
	MaxSeq = math.MaxUint32
	// MaxRootLen is the maximum length in bytes of an operation root.
	MaxRootLen = 256
	// MaxOperationIDLen is the maximum length of an operation ID
	// (root + "/" + decimal seq).
	MaxOperationIDLen = MaxRootLen + 1 + 20
)

// ParseSegment parses a Fence-Segment value: a decimal integer in
// 1..MaxSeq, nothing else (no sign, no spaces, no list). Leading zeros are
// accepted. Errors wrap ErrInvalidSegment.
func ParseSegment(v string) (uint64, error) {
	if v == "" || len(v) > 20 || strings.TrimLeft(v, "0123456789") != "" {
		return 0, fmt.Errorf("%w: %q is not a decimal integer >= 1", ErrInvalidSegment, v)
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n == 0 || n > MaxSeq {
		return 0, fmt.Errorf("%w: %q is not between 1 and %d", ErrInvalidSegment, v, uint64(MaxSeq))
	}
	return n, nil
}

// FormatSegment formats a segment number for Fence-Segment.
func FormatSegment(seq uint64) string { return strconv.FormatUint(seq, 10) }

// OperationID is the ID of one segment of an operation: root + "/" + decimal
// seq. Receipts are found by it, and the sidecar forwards it as
// Fence-Operation-Id (and Idempotency-Key).
func OperationID(root string, seq uint64) string {
	return root + "/" + strconv.FormatUint(seq, 10)
}

// ParseOperationID splits an operation ID into its root (ValidateOperationRoot)
// and its seq, a canonical decimal (no leading zeros) in 1..MaxSeq. Errors
// wrap ErrInvalidOperationID.
func ParseOperationID(id string) (root string, seq uint64, err error) {
	if len(id) > MaxOperationIDLen {
		return "", 0, fmt.Errorf("%w: longer than %d bytes", ErrInvalidOperationID, MaxOperationIDLen)
	}
	i := strings.LastIndexByte(id, '/')
	if i <= 0 {
		return "", 0, fmt.Errorf("%w: want root/seq", ErrInvalidOperationID)
	}
	if err := ValidateOperationRoot(id[:i]); err != nil {
		return "", 0, err
	}
	seq, perr := strconv.ParseUint(id[i+1:], 10, 64)
	if perr != nil || seq == 0 || seq > MaxSeq || strconv.FormatUint(seq, 10) != id[i+1:] {
		return "", 0, fmt.Errorf("%w: seq must be a canonical decimal in 1..%d", ErrInvalidOperationID, uint64(MaxSeq))
	}
	return id[:i], seq, nil
}

// ValidateOperationRoot checks an operation root: 1..MaxRootLen bytes of
// valid UTF-8 without control characters (C0, DEL). The registry's roots
// are digests (Digest); the rule is what the fenced store can keep.
// Errors wrap ErrInvalidOperationID.
func ValidateOperationRoot(root string) error {
	switch {
	case root == "":
		return fmt.Errorf("%w: empty operation root", ErrInvalidOperationID)
	case len(root) > MaxRootLen:
		return fmt.Errorf("%w: operation root longer than %d bytes", ErrInvalidOperationID, MaxRootLen)
	case !utf8.ValidString(root):
		return fmt.Errorf("%w: operation root is not valid UTF-8", ErrInvalidOperationID)
	}
	for _, c := range root {
		if c < 0x20 || c == 0x7f {
			return fmt.Errorf("%w: operation root contains a control character", ErrInvalidOperationID)
		}
	}
	return nil
}
