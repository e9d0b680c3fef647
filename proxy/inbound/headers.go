package inbound

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"

	"github.com/fencegate/fencegate"
)

// Single returns the one value of a header; ok is false when it appears
// more than once (including comma-joined lists).
func Single(h http.Header, name string) (string, bool, bool) {
	vs := h.Values(name)
	switch {
	case len(vs) == 0:
		return "", false, true
	case len(vs) > 1 || strings.Contains(vs[0], ","):
		return "", true, false
	}
	return strings.TrimSpace(vs[0]), true, true
}

// ParseSegment parses Fence-Segment with the contract's parser
// (fencegate.ParseSegment: decimal, 1..fencegate.MaxSeq, the highest segment
// the fenced store accepts). Absent is 1. A value outside the range is bad
// input (FENCE_HEADER_INVALID), never something for the store to refuse.
func ParseSegment(h http.Header) (uint64, string) {
	v, present, ok := Single(h, fencegate.HeaderSegment)
	if !ok {
		return 0, "Fence-Segment appears more than once"
	}
	if !present {
		return 1, ""
	}
	n, err := fencegate.ParseSegment(v)
	if err != nil {
		return 0, "Fence-Segment must be a decimal integer between 1 and " + strconv.FormatUint(fencegate.MaxSeq, 10)
	}
	return n, ""
}

// PayloadDigest binds a mutation's method, target and body: a replay of
// (fence, segment) matches only the very same request. It is always the
// sidecar's own SHA-256, whatever algorithm a client's Content-Digest uses
// (digest.go).
func PayloadDigest(method, target string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(method))
	h.Write([]byte{'\n'})
	h.Write([]byte(target))
	h.Write([]byte{'\n'})
	h.Write(body)
	return fencegate.DigestPrefix + hex.EncodeToString(h.Sum(nil))
}
