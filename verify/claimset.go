package verify

import (
	"fmt"
	"strconv"
)

// claim describes one claim of a schema and where it is decoded to.
type claim struct {
	name string
	str  *string // for a string claim
	num  *uint64 // for an integer claim
	// optional: the claim may be absent (it then decodes to its zero
	// value); when present it obeys the same rules as a required one.
	optional bool
	// domain, when set, checks a string claim's value (an error is
	// ErrClaimType: a value outside the claim's domain).
	domain func(string) error
}

// decodeClaims decodes payload strictly into the claims: a flat JSON object
// without duplicate members, with exactly the given claims (unknown members
// are refused, required ones must be present), the schema claim first
// checked to be exactly schema, every string claim a non-empty JSON string
// in its domain and every integer claim a JSON integer in [0, 2^64-1]
// decoded exactly, without float64.
func decodeClaims(payload []byte, schema string, claims []claim) *Error {
	obj, e := decodeObject(payload, "payload")
	if e != nil {
		return e
	}
	raw, ok := obj.get("schema")
	if !ok {
		return invalid(ErrMissingClaim, `claim "schema" is missing`)
	}
	got, ok := rawString(raw)
	if !ok {
		return invalid(ErrClaimType, `claim "schema" is not a string`)
	}
	if got != schema {
		return invalid(ErrWrongSchema, fmt.Sprintf("schema %q, want %q", got, schema))
	}
	for _, m := range obj.members {
		if !hasClaim(claims, m.name) {
			return invalid(ErrUnknownClaim, fmt.Sprintf("unknown claim %q", m.name))
		}
	}
	for _, c := range claims {
		raw, ok := obj.get(c.name)
		if !ok {
			if c.optional {
				continue
			}
			return invalid(ErrMissingClaim, fmt.Sprintf("claim %q is missing", c.name))
		}
		switch {
		case c.str != nil:
			s, ok := rawString(raw)
			if !ok {
				return invalid(ErrClaimType, fmt.Sprintf("claim %q is not a string", c.name))
			}
			if s == "" {
				return invalid(ErrEmptyClaim, fmt.Sprintf("claim %q is empty", c.name))
			}
			if c.domain != nil {
				if err := c.domain(s); err != nil {
					return invalid(ErrClaimType, fmt.Sprintf("claim %q: %v", c.name, err))
				}
			}
			*c.str = s
		case c.num != nil:
			n, ok := rawUint(raw)
			if !ok {
				return invalid(ErrClaimType, fmt.Sprintf("claim %q is not an integer in [0, 2^64-1]: %.32s", c.name, raw))
			}
			*c.num = n
		}
	}
	return nil
}

func hasClaim(claims []claim, name string) bool {
	for _, c := range claims {
		if c.name == name {
			return true
		}
	}
	return false
}

// rawUint decodes raw as a JSON integer in [0, 2^64-1]: digits only, so no
// sign, fraction or exponent, and parsed exactly.
func rawUint(raw string) (uint64, bool) {
	if len(raw) == 0 {
		return 0, false
	}
	for _, c := range raw {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	if len(raw) > 1 && raw[0] == '0' {
		return 0, false
	}
	n, err := strconv.ParseUint(raw, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}
