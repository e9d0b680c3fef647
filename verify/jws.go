package verify

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/lestrrat-go/jwx/v2/jws"
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
// to wantTyp; and finally the signature, checked by jws.Verify with exactly
// that key and alg.
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
	hdrJSON, err := decodeSegment(segs[0])
	if err != nil {
		return nil, invalid(ErrMalformed, "protected header: "+err.Error())
	}
	payload, err := decodeSegment(segs[1])
	if err != nil {
		return nil, invalid(ErrMalformed, "payload: "+err.Error())
	}
	if _, err := decodeSegment(segs[2]); err != nil {
		return nil, invalid(ErrMalformed, "signature: "+err.Error())
	}

	members, order, e := decodeObject(hdrJSON, "protected header")
	if e != nil {
		return nil, e
	}
	for _, name := range order {
		switch name {
		case hdrAlg, hdrKid, hdrTyp:
		default:
			return nil, invalid(ErrForbiddenHeader, fmt.Sprintf("protected header member %q", name))
		}
	}
	alg, e := headerString(members, hdrAlg)
	if e != nil {
		return nil, e
	}
	kid, e := headerString(members, hdrKid)
	if e != nil {
		return nil, e
	}
	typ, e := headerString(members, hdrTyp)
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

	verified, err := jws.Verify(token, jws.WithKey(key.alg, key.raw), jws.WithCompact())
	if err != nil {
		return nil, invalid(ErrBadSignature, fmt.Sprintf("signature does not verify with kid %q", kid))
	}
	if !bytes.Equal(verified, payload) {
		// Cannot happen with canonical segments; refuse rather than guess.
		return nil, invalid(ErrMalformed, "payload differs from the verified payload")
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

func decodeSegment(seg []byte) ([]byte, error) {
	out := make([]byte, b64.DecodedLen(len(seg)))
	n, err := b64.Decode(out, seg)
	if err != nil {
		return nil, errors.New("invalid base64url")
	}
	return out[:n], nil
}

func headerString(members map[string]json.RawMessage, name string) (string, *Error) {
	raw, ok := members[name]
	if !ok {
		return "", nil
	}
	s, ok := rawString(raw)
	if !ok {
		return "", invalid(ErrMalformed, fmt.Sprintf("protected header member %q is not a string", name))
	}
	return s, nil
}

// decodeObject decodes a single JSON object into its members, keeping each
// member's raw value. It refuses invalid UTF-8, invalid or truncated JSON,
// anything but one object (trailing data included) and duplicate member
// names (compared after unescaping). The member names are also returned in
// document order.
//
// The whole input is validated by json.Valid first; the walk below then
// only finds the extents of already-valid values, which is much cheaper
// than json.Decoder's token API.
func decodeObject(data []byte, what string) (map[string]json.RawMessage, []string, *Error) {
	if !utf8.Valid(data) {
		return nil, nil, invalid(ErrMalformed, what+": not valid UTF-8")
	}
	if !json.Valid(data) {
		return nil, nil, invalid(ErrMalformed, what+": invalid or truncated JSON")
	}
	i := skipSpace(data, 0)
	if data[i] != '{' {
		return nil, nil, invalid(ErrMalformed, what+": not a JSON object")
	}
	members := make(map[string]json.RawMessage, 16)
	order := make([]string, 0, 16)
	i = skipSpace(data, i+1)
	for data[i] != '}' {
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
		end := skipString(data, i)
		name, ok := rawString(data[i:end])
		if !ok {
			return nil, nil, invalid(ErrMalformed, what+": bad member name")
		}
		i = skipSpace(data, end)
		i = skipSpace(data, i+1) // ':'
		end = skipValue(data, i)
		if _, dup := members[name]; dup {
			return nil, nil, invalid(ErrDuplicateMember, fmt.Sprintf("%s: member %q occurs more than once", what, name))
		}
		members[name] = json.RawMessage(data[i:end])
		order = append(order, name)
		i = skipSpace(data, end)
	}
	return members, order, nil
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

// rawString decodes raw as a JSON string.
func rawString(raw json.RawMessage) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		// No escapes: the bytes between the quotes are the string (the
		// input is known to be valid UTF-8 JSON).
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}
