package identity

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// The grammar of X-Forwarded-Client-Cert follows Envoy's documentation of
// the header (https://www.envoyproxy.io/docs/envoy/latest/configuration/http/http_conn_man/headers#x-forwarded-client-cert),
// which says, in short:
//   - the value is a list of elements separated by ","; each proxy appends
//     its element at the end, so the last element is the nearest proxy's;
//   - an element is a list of key=value pairs separated by ";"; keys are
//     case-insensitive, values case-sensitive;
//   - a value holding ",", ";" or "=" is double-quoted, and a quote inside it
//     is written as a backslash and a quote (\");
//   - the keys are By, Hash, Cert, Chain, Subject (always quoted), URI and
//     DNS; a certificate with several URI (or DNS) SANs gives one URI (or
//     DNS) pair per SAN.
//
// Subject is a distinguished name, which may itself hold backslash escapes
// (in RFC 2253 form: \, \" \\ and others). Envoy's own XFCC reader
// (parseValueFromXfccByKey, in its XFCC_VALUE formatter extension) likewise
// treats a quote after an odd number of backslashes as escaped, and unescapes
// only \" and \\, keeping any other backslash as it is; so does parseXFCC.
//
// parseXFCC reads that grammar strictly, as written here:
//
//	header  = element *( OWS "," OWS element )
//	element = pair *( OWS ";" OWS pair )
//	pair    = key "=" value
//	key     = 1*tchar                          ; RFC 9110 token, case-insensitive
//	value   = quoted / *plain
//	plain   = any byte but CTL, SP, HTAB, DQUOTE, "," and ";"
//	                                           ; "=" is literal: the key ends at
//	                                           ; the first "=", as in Envoy
//	quoted  = DQUOTE *( qchar / "\" qany ) DQUOTE
//	qchar   = any byte but CTL, DQUOTE and "\" ; "," ";" "=" are literal here
//	qany    = any byte but CTL                 ; \" is a quote, \\ a backslash,
//	                                           ; any other \c stays \c
//	OWS     = *( SP / HTAB )
//
// Anything else is malformed and rejected as a whole: a header whose
// structure is in doubt cannot tell which element is the last one. A quote
// ends only when it is not escaped, so a quoted Subject holding
// `URI=spiffe://td/victim` (with or without escaped quotes, commas or
// semicolons inside) is one value, never a pair of the element.

// xfccElement is one parsed element: its URI values, in order.
type xfccElement struct {
	uris []string
}

// uriFromXFCC returns the identity an XFCC header carries: the single URI
// of its last element, the one the nearest proxy (the trusted one in header
// mode) appended. Any malformation, no URI, an empty URI, or two URI pairs
// in the last element (a certificate with two URI SANs is ambiguous, as in
// mtls mode) is ErrNoIdentity.
func uriFromXFCC(v string) (string, error) {
	elems, err := parseXFCC(v)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrNoIdentity, XFCC, err)
	}
	last := elems[len(elems)-1]
	switch {
	case len(last.uris) == 0:
		return "", fmt.Errorf("%w: %s: the last element has no URI field", ErrNoIdentity, XFCC)
	case len(last.uris) > 1:
		return "", fmt.Errorf("%w: %s: the last element has %d URI fields, want 1", ErrNoIdentity, XFCC, len(last.uris))
	case last.uris[0] == "":
		return "", fmt.Errorf("%w: %s: the last element has an empty URI field", ErrNoIdentity, XFCC)
	case !utf8.ValidString(last.uris[0]):
		return "", fmt.Errorf("%w: %s: the URI field is not UTF-8", ErrNoIdentity, XFCC)
	}
	return last.uris[0], nil
}

// parseXFCC parses a whole XFCC header value into its elements; it never
// returns an empty list without an error.
func parseXFCC(v string) ([]xfccElement, error) {
	p := xfccParser{s: v}
	var elems []xfccElement
	p.ows()
	for {
		el, err := p.element()
		if err != nil {
			return nil, err
		}
		elems = append(elems, el)
		p.ows()
		if p.eof() {
			return elems, nil
		}
		// element() stops only at the end, at "," or at an error.
		p.i++ // ","
		p.ows()
	}
}

type xfccParser struct {
	s string
	i int
}

func (p *xfccParser) eof() bool { return p.i >= len(p.s) }

func (p *xfccParser) ows() {
	for !p.eof() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *xfccParser) errf(format string, args ...any) error {
	return fmt.Errorf("byte %d: "+format, append([]any{p.i}, args...)...)
}

// element parses pairs up to the end of the header or an unquoted ",".
func (p *xfccParser) element() (xfccElement, error) {
	var el xfccElement
	for {
		key, val, err := p.pair()
		if err != nil {
			return el, err
		}
		if strings.EqualFold(key, "URI") {
			el.uris = append(el.uris, val)
		}
		p.ows()
		if p.eof() || p.s[p.i] == ',' {
			return el, nil
		}
		if p.s[p.i] != ';' {
			return el, p.errf("want ';', ',' or the end after a value")
		}
		p.i++
		p.ows()
	}
}

// pair parses key "=" value.
func (p *xfccParser) pair() (key, val string, err error) {
	start := p.i
	for !p.eof() && isTchar(p.s[p.i]) {
		p.i++
	}
	key = p.s[start:p.i]
	switch {
	case p.eof() || p.s[p.i] == ';' || p.s[p.i] == ',':
		if key == "" {
			return "", "", p.errf("empty key")
		}
		return "", "", p.errf("pair without '='")
	case p.s[p.i] != '=':
		if key == "" {
			return "", "", p.errf("empty key or a byte not allowed in a key")
		}
		return "", "", p.errf("byte not allowed in a key")
	case key == "":
		return "", "", p.errf("empty key")
	}
	p.i++ // "="
	if !p.eof() && p.s[p.i] == '"' {
		val, err = p.quoted()
	} else {
		val, err = p.plain()
	}
	return key, val, err
}

// plain parses an unquoted value.
func (p *xfccParser) plain() (string, error) {
	start := p.i
	for !p.eof() {
		c := p.s[p.i]
		switch {
		case c == ',' || c == ';' || c == ' ' || c == '\t':
			return p.s[start:p.i], nil
		case c == '"':
			return "", p.errf("stray quote in an unquoted value")
		case isCTL(c):
			return "", p.errf("control character")
		}
		p.i++
	}
	return p.s[start:], nil
}

// quoted parses a double-quoted value, the opening quote at p.i, and
// returns it unescaped.
func (p *xfccParser) quoted() (string, error) {
	open := p.i
	p.i++
	var b strings.Builder
	for !p.eof() {
		c := p.s[p.i]
		switch {
		case isCTL(c):
			return "", p.errf("control character")
		case c == '"':
			p.i++
			if !p.eof() {
				if n := p.s[p.i]; n != ',' && n != ';' && n != ' ' && n != '\t' {
					return "", p.errf("stray byte after a quoted value")
				}
			}
			return b.String(), nil
		case c == '\\':
			p.i++
			if p.eof() {
				break
			}
			e := p.s[p.i]
			if isCTL(e) {
				return "", p.errf("control character")
			}
			if e != '"' && e != '\\' {
				b.WriteByte('\\')
			}
			b.WriteByte(e)
		default:
			b.WriteByte(c)
		}
		p.i++
	}
	p.i = open
	return "", p.errf("unterminated quoted value")
}

// isCTL reports an ASCII control character (HTAB included: it is only
// allowed as whitespace between pairs and elements).
func isCTL(c byte) bool { return c < 0x20 || c == 0x7f }

// isTchar reports an RFC 9110 token character.
func isTchar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
