package inbound

import (
	"encoding/base64"
	"strconv"
	"strings"
)

// sfParser reads RFC 8941 Structured Field syntax (the pieces a
// Content-Digest Dictionary uses: keys, byte sequences, parameters and
// their bare items) from s, one position at a time. Every method either
// consumes what it read or returns a non-empty error text.
type sfParser struct {
	s string
	i int
}

func (p *sfParser) done() bool { return p.i >= len(p.s) }

func (p *sfParser) peek() byte {
	if p.done() {
		return 0
	}
	return p.s[p.i]
}

// eat consumes c when it is next.
func (p *sfParser) eat(c byte) bool {
	if !p.done() && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *sfParser) skipSP() {
	for p.eat(' ') {
	}
}

func (p *sfParser) skipOWS() {
	for !p.done() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// where is an error text with the offset it happened at.
func (p *sfParser) where(what string) string {
	return what + " at offset " + strconv.Itoa(p.i)
}

func lcalpha(c byte) bool { return 'a' <= c && c <= 'z' }
func digit(c byte) bool   { return '0' <= c && c <= '9' }
func alpha(c byte) bool   { return lcalpha(c) || ('A' <= c && c <= 'Z') }

// key parses key = ( lcalpha / "*" ) *( lcalpha / DIGIT / "_" / "-" / "." / "*" ).
func (p *sfParser) key() (string, string) {
	start := p.i
	if c := p.peek(); !lcalpha(c) && c != '*' {
		return "", p.where("a key must start with a lowercase letter or '*'")
	}
	p.i++
	for !p.done() {
		c := p.s[p.i]
		if !lcalpha(c) && !digit(c) && c != '_' && c != '-' && c != '.' && c != '*' {
			break
		}
		p.i++
	}
	return p.s[start:p.i], ""
}

// parameters parses *( ";" *SP key [ "=" bare-item ] ); the values are
// checked for syntax and dropped.
func (p *sfParser) parameters() string {
	for p.eat(';') {
		p.skipSP()
		if _, err := p.key(); err != "" {
			return "parameter: " + err
		}
		if p.eat('=') {
			if err := p.bareItem(); err != "" {
				return "parameter: " + err
			}
		}
	}
	return ""
}

// bareItem parses (and drops) any RFC 8941 bare item.
func (p *sfParser) bareItem() string {
	switch c := p.peek(); {
	case c == '-' || digit(c):
		return p.number()
	case c == '"':
		return p.str()
	case c == '*' || alpha(c):
		p.token()
		return ""
	case c == ':':
		_, err := p.byteSequence()
		return err
	case c == '?':
		p.i++
		if !p.eat('0') && !p.eat('1') {
			return p.where("a boolean is ?0 or ?1")
		}
		return ""
	}
	return p.where("not a bare item")
}

// number parses an Integer or a Decimal (RFC 8941 section 4.2.4).
func (p *sfParser) number() string {
	p.eat('-')
	if !digit(p.peek()) {
		return p.where("a number needs a digit")
	}
	digits, frac, decimal := 0, 0, false
	for !p.done() {
		c := p.s[p.i]
		switch {
		case digit(c):
			digits++
			if decimal {
				frac++
			}
		case c == '.' && !decimal:
			if digits > 12 {
				return p.where("a decimal has at most 12 integer digits")
			}
			decimal = true
		default:
			goto end
		}
		p.i++
	}
end:
	switch {
	case !decimal && digits > 15:
		return p.where("an integer has at most 15 digits")
	case decimal && frac == 0:
		return p.where("a decimal cannot end with '.'")
	case decimal && frac > 3:
		return p.where("a decimal has at most 3 fractional digits")
	}
	return ""
}

// str parses a String: DQUOTE *( unescaped / "\" ( DQUOTE / "\" ) ) DQUOTE.
func (p *sfParser) str() string {
	p.i++ // the opening quote
	for !p.done() {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '\\':
			if n := p.peek(); n != '"' && n != '\\' {
				return p.where("a string escapes only '\"' and '\\'")
			}
			p.i++
		case c == '"':
			return ""
		case c < 0x20 || c > 0x7e:
			return p.where("a string holds only printable ASCII")
		}
	}
	return p.where("unterminated string")
}

// token parses ( ALPHA / "*" ) *( tchar / ":" / "/" ); the caller checked
// the first character.
func (p *sfParser) token() {
	p.i++
	for !p.done() && (tchar(p.s[p.i]) || p.s[p.i] == ':' || p.s[p.i] == '/') {
		p.i++
	}
}

// byteSequence parses ":" *(base64) ":" and decodes it. Missing "="
// padding is synthesized and non-zero pad bits are accepted, as RFC 8941
// section 4.2.7 asks of parsers.
func (p *sfParser) byteSequence() ([]byte, string) {
	if !p.eat(':') {
		return nil, p.where("a byte sequence starts with ':'")
	}
	end := strings.IndexByte(p.s[p.i:], ':')
	if end < 0 {
		return nil, p.where("unterminated byte sequence")
	}
	b64 := p.s[p.i : p.i+end]
	for i := 0; i < len(b64); i++ {
		if c := b64[i]; !alpha(c) && !digit(c) && c != '+' && c != '/' && c != '=' {
			return nil, "a byte sequence holds only base64 characters at offset " + strconv.Itoa(p.i+i)
		}
	}
	if r := len(b64) % 4; r != 0 {
		b64 += strings.Repeat("=", 4-r)
	}
	out, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, p.where("a byte sequence is not valid base64")
	}
	p.i += end + 1
	return out, ""
}
