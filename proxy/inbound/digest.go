package inbound

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"hash/adler32"
	"hash/crc32"
	"net/http"
	"strings"

	"github.com/fencegate/fencegate"
)

// Content-Digest (RFC 9530) is checked against the body before a mutation
// is forwarded. It is an integrity check of what the client meant to send,
// nothing more: the payload digest that binds a replay to its request (and
// that the fenced store keeps) is always the sidecar's own SHA-256 of
// method, target and body (PayloadDigest), whatever algorithm the client
// used here.
//
// The rule:
//   - the field is an RFC 8941 Dictionary (field lines joined with ", ");
//     keys are lowercase keys; every member value is a Byte Sequence
//     (:base64:), as RFC 9530 section 2 requires; parameters (;k=v) are
//     parsed and ignored. Anything else is malformed (400 DIGEST_MISMATCH).
//   - a key named twice is refused as ambiguous. RFC 8941 says the last
//     value wins, but the backend receives the field too and may read the
//     first: the sidecar never vouches for a value another reader of the
//     same field would not see.
//   - every member whose algorithm is in the IANA "Hash Algorithms for
//     HTTP Digest Fields" registry and computable exactly (digestAlgorithms)
//     is verified; one mismatch refuses the request.
//   - a member of any other algorithm is ignored: unknown keys, and
//     unixsum, which no standard pins down (BSD and System V "sum" are two
//     different checksums, with a block count in their output, and POSIX
//     dropped the command).
//   - a field with no verified member is refused, naming what is verified:
//     the sidecar refuses only what it cannot check, and says so.
//
// The 32-bit checksums (adler, crc32c, unixcksum) are their value as a
// 4-byte big-endian byte sequence (network byte order, as RFC 1950 stores
// ADLER32 and as RFC 9260 Appendix A transmits CRC32c).

// digestAlgorithm computes one registry algorithm's value over a body.
type digestAlgorithm struct {
	name string
	sum  func([]byte) []byte
}

// digestAlgorithms are the registry's algorithms the sidecar verifies, in
// the order the refusal detail names them.
var digestAlgorithms = []digestAlgorithm{
	{"sha-256", func(b []byte) []byte { s := sha256.Sum256(b); return s[:] }},
	{"sha-512", func(b []byte) []byte { s := sha512.Sum512(b); return s[:] }},
	{"md5", func(b []byte) []byte { s := md5.Sum(b); return s[:] }},
	{"sha", func(b []byte) []byte { s := sha1.Sum(b); return s[:] }},
	{"adler", func(b []byte) []byte { return be32(adler32.Checksum(b)) }},
	{"crc32c", func(b []byte) []byte { return be32(crc32.Checksum(b, castagnoli)) }},
	{"unixcksum", func(b []byte) []byte { return be32(unixCksum(b)) }},
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// verifiedDigests names digestAlgorithms for refusal details.
var verifiedDigests = func() string {
	names := make([]string, len(digestAlgorithms))
	for i, a := range digestAlgorithms {
		names[i] = a.name
	}
	return strings.Join(names, ", ")
}()

func be32(v uint32) []byte { return []byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)} }

// cksumTable is the MSB-first table of the POSIX cksum CRC (polynomial
// 0x04C11DB7, not reflected).
var cksumTable = func() (t [256]uint32) {
	for i := range t {
		c := uint32(i) << 24
		for range 8 {
			if c&0x80000000 != 0 {
				c = c<<1 ^ 0x04C11DB7
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// unixCksum is the checksum of the POSIX cksum utility: the CRC above
// (initial value 0) over the data followed by its length in octets, least
// significant octet first, in as few octets as it takes (none for an empty
// body), then complemented.
func unixCksum(b []byte) uint32 {
	var c uint32
	step := func(o byte) { c = c<<8 ^ cksumTable[byte(c>>24)^o] }
	for _, o := range b {
		step(o)
	}
	for n := uint64(len(b)); n > 0; n >>= 8 {
		step(byte(n))
	}
	return ^c
}

// CheckContentDigest checks the Content-Digest field against the body by
// the rule above; it returns "" when the field is absent or verified, and
// otherwise the refusal's detail (400 DIGEST_MISMATCH).
func CheckContentDigest(h http.Header, body []byte) string {
	vs := h.Values(fencegate.HeaderDigest)
	if len(vs) == 0 {
		return ""
	}
	members, err := parseDigestDictionary(strings.Join(vs, ", "))
	if err != "" {
		return "Content-Digest is malformed: " + err
	}
	verified := 0
	for _, alg := range digestAlgorithms {
		want, ok := members[alg.name]
		if !ok {
			continue
		}
		if subtle.ConstantTimeCompare(alg.sum(body), want) != 1 {
			return "Content-Digest " + alg.name + " does not match the body"
		}
		verified++
	}
	if verified == 0 {
		return "Content-Digest has no member this sidecar can verify; it verifies " + verifiedDigests
	}
	return ""
}

// parseDigestDictionary parses a Content-Digest value (RFC 8941 section
// 4.2, Dictionary) into its members' byte sequences; err says what is wrong.
func parseDigestDictionary(v string) (map[string][]byte, string) {
	p := &sfParser{s: v}
	p.skipSP()
	out := map[string][]byte{}
	for !p.done() {
		key, err := p.key()
		if err != "" {
			return nil, err
		}
		if !p.eat('=') {
			return nil, "member " + key + " has no value (a byte sequence :base64: is required)"
		}
		if p.peek() != ':' {
			return nil, "member " + key + " is not a byte sequence (:base64:)"
		}
		val, err := p.byteSequence()
		if err != "" {
			return nil, "member " + key + ": " + err
		}
		if err := p.parameters(); err != "" {
			return nil, "member " + key + ": " + err
		}
		if _, dup := out[key]; dup {
			return nil, "member " + key + " appears more than once (ambiguous)"
		}
		out[key] = val
		p.skipOWS()
		if p.done() {
			return out, ""
		}
		if !p.eat(',') {
			return nil, p.where("expected ','")
		}
		p.skipOWS()
		if p.done() {
			return nil, "trailing ','"
		}
	}
	return out, ""
}
