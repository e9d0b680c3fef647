package proxy

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"net/http"
	"strconv"
	"strings"

	"github.com/fencegate/fencegate/registry/client"
	"github.com/fencegate/fencegate/store"
)

// Request and response headers of the contract. The worker SDK
// (registry/client) owns their spelling; the sidecar re-exports them.
const (
	HeaderGrant       = client.HeaderGrant
	HeaderStatus      = client.HeaderStatus
	HeaderSegment     = client.HeaderSegment
	HeaderToken       = client.HeaderToken
	HeaderResource    = client.HeaderResource
	HeaderRoot        = client.HeaderRoot
	HeaderOperationID = client.HeaderOperationID
	HeaderReceipt     = client.HeaderReceipt
	HeaderReplayed    = client.HeaderReplayed
	HeaderIdempotency = "Idempotency-Key"
	HeaderDigest      = "Content-Digest"
)

// fenceHeaders are removed from every request before it reaches the
// backend: a client cannot speak for the sidecar.
var fenceHeaders = []string{HeaderGrant, HeaderStatus, HeaderSegment, HeaderToken, HeaderResource, HeaderRoot, HeaderOperationID, HeaderReceipt, HeaderReplayed}

// single returns the one value of a header; ok is false when it appears
// more than once (including comma-joined lists).
func single(h http.Header, name string) (string, bool, bool) {
	vs := h.Values(name)
	switch {
	case len(vs) == 0:
		return "", false, true
	case len(vs) > 1 || strings.Contains(vs[0], ","):
		return "", true, false
	}
	return strings.TrimSpace(vs[0]), true, true
}

// parseSegment parses Fence-Segment: decimal, 1..store.MaxSeq (the highest
// segment the fenced store accepts). Absent is 1. A value outside the range
// is bad input (FENCE_HEADER_INVALID), never something for the store to refuse.
func parseSegment(h http.Header) (uint64, string) {
	v, present, ok := single(h, HeaderSegment)
	if !ok {
		return 0, "Fence-Segment appears more than once"
	}
	if !present {
		return 1, ""
	}
	if v == "" || len(v) > 20 || strings.TrimLeft(v, "0123456789") != "" {
		return 0, "Fence-Segment must be a decimal integer >= 1"
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n == 0 || n > store.MaxSeq {
		return 0, "Fence-Segment must be a decimal integer between 1 and " + strconv.FormatUint(store.MaxSeq, 10)
	}
	return n, ""
}

// payloadDigest binds a mutation's method, target and body: a replay of
// (fence, segment) matches only the very same request.
func payloadDigest(method, target string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(method))
	h.Write([]byte{'\n'})
	h.Write([]byte(target))
	h.Write([]byte{'\n'})
	h.Write(body)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// checkContentDigest checks an RFC 9530 Content-Digest header against the
// body. sha-256 and sha-512 are checked; other algorithms are ignored; a
// header with no usable member, or any mismatch, is an error message.
func checkContentDigest(h http.Header, body []byte) string {
	vs := h.Values(HeaderDigest)
	if len(vs) == 0 {
		return ""
	}
	checked := 0
	for _, member := range strings.Split(strings.Join(vs, ","), ",") {
		alg, val, ok := strings.Cut(strings.TrimSpace(member), "=")
		if !ok {
			return "Content-Digest is malformed"
		}
		var hf func() hash.Hash
		switch strings.ToLower(strings.TrimSpace(alg)) {
		case "sha-256":
			hf = sha256.New
		case "sha-512":
			hf = sha512.New
		default:
			continue
		}
		val = strings.TrimSpace(val)
		if len(val) < 2 || val[0] != ':' || val[len(val)-1] != ':' {
			return "Content-Digest value must be a byte sequence (:base64:)"
		}
		want, err := base64.StdEncoding.DecodeString(val[1 : len(val)-1])
		if err != nil {
			return "Content-Digest value is not base64"
		}
		d := hf()
		d.Write(body)
		if string(d.Sum(nil)) != string(want) {
			return "Content-Digest does not match the body"
		}
		checked++
	}
	if checked == 0 {
		return "Content-Digest has no sha-256 or sha-512 member"
	}
	return ""
}
