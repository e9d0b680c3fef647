package identity_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/fencegate/fencegate/identity"
)

// refXFCC is the reference model of the XFCC identity: a plain state
// machine over the bytes, written apart from the production parser. It
// returns the single URI of the last element, or ok=false when the header is
// malformed or the identity ambiguous or empty.
func refXFCC(h string) (string, bool) {
	const (
		pairStart = iota // before a key, whitespace allowed
		inKey
		valueStart // just after "="
		inPlain
		inQuoted
		inEscape // after a backslash inside quotes
		afterValue
	)
	isWS := func(c byte) bool { return c == ' ' || c == '\t' }
	isCtl := func(c byte) bool { return c < 0x20 || c == 0x7f }
	isKey := func(c byte) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", rune(c))
	}
	var (
		state = pairStart
		key   []byte
		val   []byte
		uris  []string // URIs of the current element
	)
	endPair := func() {
		k := strings.ToLower(string(key))
		if k == "uri" {
			uris = append(uris, string(val))
		}
		key, val = key[:0], val[:0]
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch state {
		case pairStart:
			switch {
			case isWS(c):
			case isKey(c):
				key = append(key, c)
				state = inKey
			default:
				return "", false // empty key, empty pair or element
			}
		case inKey:
			switch {
			case isKey(c):
				key = append(key, c)
			case c == '=':
				state = valueStart
			default:
				return "", false // no "=", or a byte not in a key
			}
		case valueStart, inPlain:
			switch {
			case c == '"' && state == valueStart:
				state = inQuoted
			case c == ',':
				endPair()
				uris = nil
				state = pairStart
			case c == ';':
				endPair()
				state = pairStart
			case isWS(c): // before the control check: HTAB is whitespace here
				endPair()
				state = afterValue
			case c == '"' || isCtl(c):
				return "", false
			default:
				val = append(val, c)
				state = inPlain
			}
		case inQuoted:
			switch {
			case isCtl(c):
				return "", false
			case c == '\\':
				state = inEscape
			case c == '"':
				endPair()
				state = afterValue
			default:
				val = append(val, c)
			}
		case inEscape:
			switch {
			case isCtl(c):
				return "", false
			case c == '"' || c == '\\':
				val = append(val, c)
			default:
				val = append(val, '\\', c)
			}
			state = inQuoted
		case afterValue:
			switch {
			case isWS(c):
			case c == ',':
				uris = nil
				state = pairStart
			case c == ';':
				state = pairStart
			default:
				return "", false
			}
		}
	}
	switch state {
	case valueStart, inPlain:
		endPair()
	case afterValue:
	default:
		return "", false // empty header, trailing separator, no "=", open quote
	}
	if len(uris) != 1 || uris[0] == "" || !utf8.ValidString(uris[0]) {
		return "", false
	}
	return uris[0], true
}

// xfccPair and xfccGen build XFCC headers from fuzzed bytes: the model knows
// each value, the encoder quotes and escapes it per Envoy's grammar.
type xfccPair struct {
	key, val string
	quote    bool
}

type xfccGen struct {
	b []byte
}

func (g *xfccGen) next() byte {
	if len(g.b) == 0 {
		return 0
	}
	c := g.b[0]
	g.b = g.b[1:]
	return c
}

var (
	genKeys  = []string{"By", "Hash", "Cert", "Chain", "Subject", "URI", "DNS", "uri", "Uri", "subject", "dns"}
	genAtoms = []string{"a", "Z", "9", "spiffe://td/", "victim", "/", ":", ",", ";", "=", `"`, `\`, " ", "\t", "URI=", "é", "\xff", "\x01", "\x7f", `\"`, `\\`}
)

// build returns the header, the pairs of each element, and whether the
// header holds a control character inside a value.
func (g *xfccGen) build() (string, [][]xfccPair, bool) {
	var elems [][]xfccPair
	ctl := false
	for n := int(g.next()%4) + 1; n > 0; n-- {
		var el []xfccPair
		for m := int(g.next()%4) + 1; m > 0; m-- {
			p := xfccPair{key: genKeys[int(g.next())%len(genKeys)]}
			var v strings.Builder
			for l := int(g.next() % 6); l > 0; l-- {
				v.WriteString(genAtoms[int(g.next())%len(genAtoms)])
			}
			p.val = v.String()
			p.quote = g.next()%2 == 0 || strings.EqualFold(p.key, "Subject") || strings.ContainsAny(p.val, ",;=\"\\ \t")
			for i := 0; i < len(p.val); i++ {
				if p.val[i] < 0x20 || p.val[i] == 0x7f {
					ctl = true
				}
			}
			el = append(el, p)
		}
		elems = append(elems, el)
	}
	ows := func() string { return []string{"", "", " ", "\t", "  "}[int(g.next())%5] }
	var h strings.Builder
	h.WriteString(ows())
	for i, el := range elems {
		if i > 0 {
			h.WriteString(ows() + "," + ows())
		}
		for j, p := range el {
			if j > 0 {
				h.WriteString(ows() + ";" + ows())
			}
			h.WriteString(p.key + "=")
			if p.quote {
				h.WriteString(`"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(p.val) + `"`)
			} else {
				h.WriteString(p.val)
			}
		}
	}
	h.WriteString(ows())
	return h.String(), elems, ctl
}

// FuzzXFCC checks the production XFCC parser (through Identify in header
// mode) against the reference model, both on arbitrary bytes and on headers
// encoded from random structured elements: never a panic; the same verdict
// and the same identity as the model on every input; and for generated
// headers exactly the URI of the last element, or an error exactly when
// that element has not one non-empty URI, or a value holds a control
// character or the URI is not UTF-8.
func FuzzXFCC(f *testing.F) {
	for _, s := range []string{
		`Subject="CN=x;URI=spiffe://td/victim";URI=spiffe://td/attacker`,
		`URI=spiffe://td/attacker;Subject="CN=x,URI=spiffe://td/victim"`,
		`URI=spiffe://td/victim;URI=spiffe://td/attacker`,
		`Subject="CN=\"x;URI=spiffe://td/victim\"";URI=spiffe://td/attacker`,
		`Subject="CN=x\\\";URI=spiffe://td/victim";URI=spiffe://td/attacker`,
		`By=spiffe://td/p;URI=spiffe://td/a, By=spiffe://td/q ; Subject="O=a,CN=b";URI=spiffe://td/w`,
		`URI=spiffe://td/victim,By=spiffe://td/proxy;Hash=abc`,
		`URI="spiffe://td/victim`, `URI=a"b`, `URI=a;junk`, `=x;URI=a`, `URI=`, "URI=a\x01", `;;,=,URI=`,
		`Subject="x\`, `URI="a,b;c=d"`, ` URI=a `, `URI=\"a`,
	} {
		f.Add(s, []byte{1, 2, 3, 4, 5, 6, 7, 8})
	}
	f.Add("", []byte{3, 3, 5, 1, 7, 2, 9, 14, 11, 0, 4, 200, 16, 17, 2, 3})
	f.Fuzz(func(t *testing.T, raw string, shape []byte) {
		check := func(h string) (string, error) {
			id, err := identifyXFCC(t, "", h)
			want, ok := refXFCC(h)
			switch {
			case err != nil && !errors.Is(err, identity.ErrNoIdentity):
				t.Fatalf("%q: error %v does not wrap ErrNoIdentity", h, err)
			case err == nil && id == "":
				t.Fatalf("%q: empty identity accepted", h)
			case (err == nil) != ok:
				t.Fatalf("%q: production %q, %v; model %q, %v", h, id, err, want, ok)
			case ok && id != want:
				t.Fatalf("%q: production %q, model %q", h, id, want)
			}
			return id, err
		}
		check(raw)

		h, elems, ctl := (&xfccGen{b: shape}).build()
		id, err := check(h)
		var uris []string
		for _, p := range elems[len(elems)-1] {
			if strings.EqualFold(p.key, "URI") {
				uris = append(uris, p.val)
			}
		}
		wantOK := !ctl && len(uris) == 1 && uris[0] != "" && utf8.ValidString(uris[0])
		if (err == nil) != wantOK || (wantOK && id != uris[0]) {
			t.Fatalf("generated %q (last element %+v): got %q, %v; want URI %q, accept %v", h, elems[len(elems)-1], id, err, uris, wantOK)
		}
	})
}
