package verify

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxTokenBytes is the default size limit of a token, checked before any
// parsing. Change it per call with WithMaxTokenBytes.
const MaxTokenBytes = 8192

// Option changes how a token is parsed.
type Option func(*options)

type options struct {
	maxTokenBytes int
}

// WithMaxTokenBytes sets the size limit of the token in bytes. n <= 0 keeps
// the default, MaxTokenBytes.
func WithMaxTokenBytes(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.maxTokenBytes = n
		}
	}
}

// TokenLimit returns the size limit in bytes that opts set (MaxTokenBytes
// when none does): a token longer than this is refused before anything
// else. Callers that do work per token before verifying (hashing it for a
// cache) check it first, so an oversized token costs them nothing.
func TokenLimit(opts ...Option) int { return buildOptions(opts).maxTokenBytes }

func buildOptions(opts []Option) options {
	o := options{maxTokenBytes: MaxTokenBytes}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

var b64 = base64.RawURLEncoding.Strict()

// Protected header members that are accepted. Everything else ("crit",
// "jwk", "jku", "x5u", "x5c", "x5t", "b64", "cty", ...) is refused.
const (
	hdrAlg = "alg"
	hdrKid = "kid"
	hdrTyp = "typ"
)

// verifyCompact authenticates a compact JWS and returns its payload. It
// enforces, in this order: the size limit; the compact form (three
// segments of canonical unpadded base64url, nothing else, header and
// payload non-empty); a strict protected header (a JSON object without
// duplicate members, only alg, kid and typ, all strings); alg in the
// allow-list; kid in the bundle; alg equal to the key's own alg; typ equal
// to wantTyp; and finally the signature, checked with exactly that key and
// alg over the segments already split here (checkSignature: what
// jws.Verify does, without parsing the token again).
func verifyCompact(token []byte, b *Bundle, wantTyp string, o options) ([]byte, *Error) {
	if len(token) > o.maxTokenBytes {
		return nil, invalid(ErrOversized, fmt.Sprintf("token of %d bytes exceeds the limit of %d", len(token), o.maxTokenBytes))
	}
	if b == nil {
		return nil, invalid(ErrUnknownKid, "no trust bundle")
	}
	segs, e := splitCompact(token)
	if e != nil {
		return nil, e
	}
	// One buffer for the three decoded segments.
	buf := make([]byte, 0, b64.DecodedLen(len(segs[0]))+b64.DecodedLen(len(segs[1]))+b64.DecodedLen(len(segs[2])))
	hdrJSON, err := decodeSegment(&buf, segs[0])
	if err != nil {
		return nil, invalid(ErrMalformed, "protected header: "+err.Error())
	}
	payload, err := decodeSegment(&buf, segs[1])
	if err != nil {
		return nil, invalid(ErrMalformed, "payload: "+err.Error())
	}
	sig, err := decodeSegment(&buf, segs[2])
	if err != nil {
		return nil, invalid(ErrMalformed, "signature: "+err.Error())
	}

	hdr, e := decodeObject(hdrJSON, "protected header")
	if e != nil {
		return nil, e
	}
	for _, m := range hdr.members {
		switch m.name {
		case hdrAlg, hdrKid, hdrTyp:
		default:
			return nil, invalid(ErrForbiddenHeader, fmt.Sprintf("protected header member %q", m.name))
		}
	}
	alg, e := headerString(hdr, hdrAlg)
	if e != nil {
		return nil, e
	}
	kid, e := headerString(hdr, hdrKid)
	if e != nil {
		return nil, e
	}
	typ, e := headerString(hdr, hdrTyp)
	if e != nil {
		return nil, e
	}

	if alg == "" {
		return nil, invalid(ErrAlgNotAllowed, "no alg in protected header")
	}
	if !b.algAllowed(alg) {
		return nil, invalid(ErrAlgNotAllowed, fmt.Sprintf("alg %q is not in the allow-list", alg))
	}
	if kid == "" {
		return nil, invalid(ErrUnknownKid, "no kid in protected header")
	}
	key, ok := b.keys[kid]
	if !ok {
		return nil, invalid(ErrUnknownKid, fmt.Sprintf("kid %q is not in the trust bundle", kid))
	}
	if key.alg.String() != alg {
		return nil, invalid(ErrAlgNotAllowed, fmt.Sprintf("alg %q does not match the %s key %q", alg, key.alg, kid))
	}
	if typ != wantTyp {
		return nil, invalid(ErrWrongSchema, fmt.Sprintf("typ %q, want %q", typ, wantTyp))
	}

	// The signing input is the header and payload segments as sent, with
	// the dot between them: a prefix of the token.
	input := token[:len(segs[0])+1+len(segs[1])]
	if !checkSignature(key, input, sig) {
		return nil, invalid(ErrBadSignature, fmt.Sprintf("signature does not verify with kid %q", kid))
	}
	return payload, nil
}

// splitCompact checks the compact form and returns its three segments.
func splitCompact(token []byte) ([3][]byte, *Error) {
	var segs [3][]byte
	if len(token) == 0 {
		return segs, invalid(ErrMalformed, "empty token")
	}
	n, start := 0, 0
	for i, c := range token {
		switch {
		case c == '.':
			if n == 2 {
				return segs, invalid(ErrMalformed, "more than three segments")
			}
			segs[n] = token[start:i]
			n++
			start = i + 1
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return segs, invalid(ErrMalformed, fmt.Sprintf("byte 0x%02x at offset %d is not base64url", c, i))
		}
	}
	if n != 2 {
		return segs, invalid(ErrMalformed, fmt.Sprintf("%d segments, want 3", n+1))
	}
	segs[2] = token[start:]
	// An empty signature (an unsecured "alg":"none" token) is left for the
	// alg check to refuse, so it is reported as ErrAlgNotAllowed.
	if len(segs[0]) == 0 || len(segs[1]) == 0 {
		return segs, invalid(ErrMalformed, "empty header or payload segment")
	}
	return segs, nil
}

// decodeSegment decodes seg into the free capacity of *buf (which must
// have room for it) and returns the decoded bytes.
func decodeSegment(buf *[]byte, seg []byte) ([]byte, error) {
	start := len(*buf)
	out := (*buf)[start : start+b64.DecodedLen(len(seg))]
	n, err := b64.Decode(out, seg)
	if err != nil {
		return nil, errors.New("invalid base64url")
	}
	*buf = (*buf)[:start+n]
	return out[:n:n], nil
}

func headerString(o object, name string) (string, *Error) {
	raw, ok := o.get(name)
	if !ok {
		return "", nil
	}
	s, ok := rawString(raw)
	if !ok {
		return "", invalid(ErrMalformed, fmt.Sprintf("protected header member %q is not a string", name))
	}
	return s, nil
}

// object is a decoded JSON object: its text and its members in document
// order. Names and raw values are substrings of src, so decoding a token
// costs one copy of its text rather than an allocation per member.
type object struct {
	src     string
	members []member
}

// member is one member of an object: its unescaped name and its raw JSON
// value.
type member struct {
	name string
	raw  string
}

// get returns the raw value of the member name.
func (o object) get(name string) (string, bool) {
	for _, m := range o.members {
		if m.name == name {
			return m.raw, true
		}
	}
	return "", false
}

// pairwiseLimit is the member count up to which duplicates are found by
// comparing every pair; larger objects (never a valid token) use a map,
// so the check stays linear.
const pairwiseLimit = 32

// decodeObject decodes a single JSON object into its members, in document
// order, each with its raw value. It refuses invalid UTF-8, invalid or
// truncated JSON, anything but one object (trailing data included) and
// duplicate member names (compared after unescaping).
//
// The whole input is validated by json.Valid first; the walk below then
// only finds the extents of already-valid values, which is much cheaper
// than json.Decoder's token API.
func decodeObject(data []byte, what string) (object, *Error) {
	if !utf8.Valid(data) {
		return object{}, invalid(ErrMalformed, what+": not valid UTF-8")
	}
	if !json.Valid(data) {
		return object{}, invalid(ErrMalformed, what+": invalid or truncated JSON")
	}
	i := skipSpace(data, 0)
	if data[i] != '{' {
		return object{}, invalid(ErrMalformed, what+": not a JSON object")
	}
	o := object{src: string(data), members: make([]member, 0, 16)}
	var seen map[string]struct{}
	i = skipSpace(data, i+1)
	for data[i] != '}' {
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
		end := skipString(data, i)
		name, ok := rawString(o.src[i:end])
		if !ok {
			return object{}, invalid(ErrMalformed, what+": bad member name")
		}
		i = skipSpace(data, end)
		i = skipSpace(data, i+1) // ':'
		end = skipValue(data, i)
		if o.has(name, &seen) {
			return object{}, invalid(ErrDuplicateMember, fmt.Sprintf("%s: member %q occurs more than once", what, name))
		}
		o.members = append(o.members, member{name: name, raw: o.src[i:end]})
		i = skipSpace(data, end)
	}
	return o, nil
}

// has reports whether o already has a member name, and notes name in
// *seen once o is too large for pairwise comparison.
func (o *object) has(name string, seen *map[string]struct{}) bool {
	if len(o.members) < pairwiseLimit {
		for _, m := range o.members {
			if m.name == name {
				return true
			}
		}
		return false
	}
	if *seen == nil {
		*seen = make(map[string]struct{}, 2*len(o.members))
		for _, m := range o.members {
			(*seen)[m.name] = struct{}{}
		}
	}
	if _, dup := (*seen)[name]; dup {
		return true
	}
	(*seen)[name] = struct{}{}
	return false
}

// The skip helpers walk JSON that json.Valid has accepted.

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index after the string starting at data[i] == '"'.
func skipString(data []byte, i int) int {
	for i++; data[i] != '"'; i++ {
		if data[i] == '\\' {
			i++
		}
	}
	return i + 1
}

// skipValue returns the index after the value starting at data[i].
func skipValue(data []byte, i int) int {
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for {
			switch data[i] {
			case '"':
				i = skipString(data, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
	default: // number, true, false, null
		for i < len(data) {
			switch data[i] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return i
			}
			i++
		}
		return i
	}
}

// rawString decodes raw as a JSON string. Without escapes the result is
// a substring of raw (no copy).
func rawString(raw string) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if strings.IndexByte(raw, '\\') < 0 {
		// No escapes: the bytes between the quotes are the string (the
		// input is known to be valid UTF-8 JSON).
		return raw[1 : len(raw)-1], true
	}
	var s string
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return "", false
	}
	return s, true
}
