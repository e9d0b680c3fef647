package verify

import (
	"errors"
	"fmt"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwk"

	"github.com/fencegate/fencegate"
)

// MaxSignedBundleBytes is the default size limit of a signed trust bundle
// (WithMaxTokenBytes changes it per call): 64 keys (the most a sidecar
// pins) of any supported type fit in a quarter of it.
const MaxSignedBundleBytes = 128 << 10

// Reasons of a signed bundle's rejection, besides the token reasons
// (ErrOversized, ErrMalformed, ErrDuplicateMember, ErrForbiddenHeader,
// ErrAlgNotAllowed, ErrUnknownKid, ErrWrongSchema, ErrBadSignature,
// ErrMissingClaim, ErrUnknownClaim, ErrClaimType).
var (
	// ErrBadSignedBundle is the sentinel every rejection of a signed
	// bundle unwraps to (a *BundleError).
	ErrBadSignedBundle = errors.New("verify: signed trust bundle refused")
	// ErrBundleKeys: the keys member is not a JWK set of 1..fencegate.MaxBundleKeys
	// keys, each one JSON object without duplicate members, that jwx
	// parses.
	ErrBundleKeys = errors.New("bundle keys unusable")
	// ErrBundleExpired: now is at or after the bundle's exp.
	ErrBundleExpired = errors.New("signed bundle expired")
	// ErrBundleFromFuture: the bundle's iat is later than now plus the
	// clock skew.
	ErrBundleFromFuture = errors.New("signed bundle issued in the future")
)

// BundleError is the error of every signed-bundle function: it unwraps to
// ErrBadSignedBundle and to its Reason. (Grants and proofs use *Error,
// whose codes are request rejections; a bundle is not a request.)
type BundleError struct {
	// Reason is the reason sentinel (ErrUnknownKid, ErrBundleExpired, ...).
	Reason error
	// Detail explains; it may quote header or payload values.
	Detail string
}

// Error returns "verify: signed trust bundle refused: detail".
func (e *BundleError) Error() string {
	d := e.Detail
	if d == "" && e.Reason != nil {
		d = e.Reason.Error()
	}
	return ErrBadSignedBundle.Error() + ": " + d
}

// Unwrap returns ErrBadSignedBundle and the reason.
func (e *BundleError) Unwrap() []error { return []error{ErrBadSignedBundle, e.Reason} }

func bundleErr(e *Error) *BundleError { return &BundleError{Reason: e.Reason, Detail: e.Detail} }

// SignedBundle is a fencegateBundle.v1.
type SignedBundle struct {
	// Kid is the kid of the protected header: the key that signed it.
	Kid string
	// IssuedAt and ExpiresAt are the iat and exp members, Unix
	// milliseconds; ExpiresAt > IssuedAt.
	IssuedAt, ExpiresAt uint64
	// Keys are the keys member, parsed by jwx (1..fencegate.MaxBundleKeys keys; each
	// key's own checks are NewBundle's).
	Keys jwk.Set
}

// ParseAndVerifySignedBundle authenticates a fencegateBundle.v1 compact
// JWS with the keys of b (the keys allowed to sign a bundle: a sidecar
// passes the keys it has pinned) and returns it. The checks are those of
// a grant (ParseAndVerifyGrant 1-8), with the size limit
// MaxSignedBundleBytes by default and typ exactly fencegate.BundleSchema: the size
// limit, the compact form, a protected header of exactly alg, kid and typ
// (no header-supplied keys), alg in b's allow-list, kid naming a key of b
// [ErrUnknownKid: signed by a key not trusted], alg the key's own, typ,
// the signature; then the payload (decodeBundlePayload). Time is checked
// by CheckBundleTime. Every error is a *BundleError.
func ParseAndVerifySignedBundle(token []byte, b *Bundle, opts ...Option) (*SignedBundle, error) {
	o := buildBundleOptions(opts)
	payload, e := verifyCompact(token, b, fencegate.BundleSchema, o)
	if e != nil {
		return nil, bundleErr(e)
	}
	sb, e := decodeBundlePayload(payload)
	if e != nil {
		return nil, bundleErr(e)
	}
	sb.Kid = kidOfHeader(token)
	return sb, nil
}

// ParseSignedBundleUnverified decodes a fencegateBundle.v1 WITHOUT
// authenticating it: the size limit, the compact form, the header's kid
// and the payload, as ParseAndVerifySignedBundle decodes them. Nothing it
// returns may be trusted; a sidecar uses it only to find, among the keys
// the bundle carries, key material whose RFC 7638 thumbprint it has
// pinned (a thumbprint names the key material, so such a key is the
// pinned key whoever wrote the file), and then authenticates the bundle
// with ParseAndVerifySignedBundle. Every error is a *BundleError.
func ParseSignedBundleUnverified(token []byte, opts ...Option) (*SignedBundle, error) {
	o := buildBundleOptions(opts)
	if len(token) > o.maxTokenBytes {
		return nil, &BundleError{Reason: ErrOversized, Detail: fmt.Sprintf("signed bundle of %d bytes exceeds the limit of %d", len(token), o.maxTokenBytes)}
	}
	segs, e := splitCompact(token)
	if e != nil {
		return nil, bundleErr(e)
	}
	payload, err := b64.DecodeString(string(segs[1]))
	if err != nil {
		return nil, &BundleError{Reason: ErrMalformed, Detail: "payload: invalid base64url"}
	}
	sb, e := decodeBundlePayload(payload)
	if e != nil {
		return nil, bundleErr(e)
	}
	sb.Kid = kidOfHeader(token)
	return sb, nil
}

// CheckBundleTime checks a signed bundle's times against now: now before
// exp [ErrBundleExpired], iat no later than now + skew
// [ErrBundleFromFuture]. (Replays are refused by the sidecar's pins: a
// bundle pins keys only when it is newer than every signed bundle taken.)
func CheckBundleTime(sb *SignedBundle, now time.Time, skew time.Duration) error {
	if sb == nil {
		return &BundleError{Reason: ErrMalformed, Detail: "no bundle"}
	}
	nowMs := uint64(max(now.UnixMilli(), 0))
	skewMs := uint64(max(skew.Milliseconds(), 0))
	switch {
	case nowMs >= sb.ExpiresAt:
		return &BundleError{Reason: ErrBundleExpired, Detail: fmt.Sprintf("signed bundle expired at %s", time.UnixMilli(int64(min(sb.ExpiresAt, 1<<62))).UTC().Format(time.RFC3339))}
	case sb.IssuedAt > satAdd(nowMs, skewMs):
		return &BundleError{Reason: ErrBundleFromFuture, Detail: fmt.Sprintf("signed bundle issued at %d, after now %d + skew %s", sb.IssuedAt, nowMs, skew)}
	}
	return nil
}

func buildBundleOptions(opts []Option) options {
	o := options{maxTokenBytes: MaxSignedBundleBytes}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// kidOfHeader returns the kid of a token whose header already decoded
// (ParseSignedBundleUnverified has not checked it: "" when absent or bad).
func kidOfHeader(token []byte) string {
	segs, e := splitCompact(token)
	if e != nil {
		return ""
	}
	raw, err := b64.DecodeString(string(segs[0]))
	if err != nil {
		return ""
	}
	hdr, e := decodeObject(raw, "protected header")
	if e != nil {
		return ""
	}
	kid, e := headerString(hdr, hdrKid)
	if e != nil {
		return ""
	}
	return kid
}

// decodeBundlePayload decodes a signed bundle's payload strictly: one JSON
// object in valid UTF-8 without duplicate members [ErrMalformed,
// ErrDuplicateMember], with exactly the members schema, iat, exp and keys
// [ErrUnknownClaim, ErrMissingClaim]; schema exactly fencegate.BundleSchema
// [ErrWrongSchema]; iat and exp plain JSON integers with exp > iat
// [ErrClaimType]; keys an array of 1..fencegate.MaxBundleKeys JSON objects, each
// without duplicate members, that jwx parses as a JWK set [ErrBundleKeys].
func decodeBundlePayload(payload []byte) (*SignedBundle, *Error) {
	obj, e := decodeObject(payload, "payload")
	if e != nil {
		return nil, e
	}
	for _, m := range obj.members {
		switch m.name {
		case "schema", "iat", "exp", "keys":
		default:
			return nil, invalid(ErrUnknownClaim, fmt.Sprintf("unknown member %q", m.name))
		}
	}
	get := func(name string) (string, *Error) {
		raw, ok := obj.get(name)
		if !ok {
			return "", invalid(ErrMissingClaim, fmt.Sprintf("member %q is missing", name))
		}
		return raw, nil
	}
	raw, e := get("schema")
	if e != nil {
		return nil, e
	}
	if s, ok := rawString(raw); !ok || s != fencegate.BundleSchema {
		return nil, invalid(ErrWrongSchema, fmt.Sprintf("schema %.64s, want %q", raw, fencegate.BundleSchema))
	}
	sb := &SignedBundle{}
	for _, n := range []struct {
		name string
		dst  *uint64
	}{{"iat", &sb.IssuedAt}, {"exp", &sb.ExpiresAt}} {
		raw, e := get(n.name)
		if e != nil {
			return nil, e
		}
		v, ok := rawUint(raw)
		if !ok {
			return nil, invalid(ErrClaimType, fmt.Sprintf("member %q is not an integer in [0, 2^64-1]: %.32s", n.name, raw))
		}
		*n.dst = v
	}
	if sb.ExpiresAt <= sb.IssuedAt {
		return nil, invalid(ErrClaimType, `member "exp" must be after "iat"`)
	}
	raw, e = get("keys")
	if e != nil {
		return nil, e
	}
	n, e := checkKeyArray(raw)
	if e != nil {
		return nil, e
	}
	set, err := jwk.Parse([]byte(`{"keys":` + raw + `}`))
	if err != nil {
		return nil, invalid(ErrBundleKeys, "keys: "+err.Error())
	}
	if set.Len() != n {
		return nil, invalid(ErrBundleKeys, fmt.Sprintf("keys: %d members parsed as %d keys", n, set.Len()))
	}
	sb.Keys = set
	return sb, nil
}

// checkKeyArray checks that raw (valid JSON) is an array of
// 1..fencegate.MaxBundleKeys objects, each without duplicate members, and returns
// their number.
func checkKeyArray(raw string) (int, *Error) {
	data := []byte(raw)
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '[' {
		return 0, invalid(ErrBundleKeys, "keys is not an array")
	}
	n := 0
	i = skipSpace(data, i+1)
	for i < len(data) && data[i] != ']' {
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
		end := skipValue(data, i)
		if data[i] != '{' {
			return 0, invalid(ErrBundleKeys, fmt.Sprintf("keys[%d] is not an object", n))
		}
		if _, e := decodeObject(data[i:end], fmt.Sprintf("keys[%d]", n)); e != nil {
			return 0, invalid(e.Reason, e.Detail)
		}
		n++
		if n > fencegate.MaxBundleKeys {
			return 0, invalid(ErrBundleKeys, fmt.Sprintf("more than %d keys", fencegate.MaxBundleKeys))
		}
		i = skipSpace(data, end)
	}
	if n == 0 {
		return 0, invalid(ErrBundleKeys, "no keys")
	}
	return n, nil
}
