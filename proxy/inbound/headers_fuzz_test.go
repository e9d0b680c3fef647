package inbound

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"testing"

	"github.com/fencegate/fencegate"
)

// FuzzParseSegment: any Fence-Segment value either parses to the decimal
// integer it spells (>= 1) or is refused; never a panic.
func FuzzParseSegment(f *testing.F) {
	for _, s := range []string{"1", "0", "-1", "18446744073709551615", "18446744073709551616", "1,2", " 7 ", "+3", "0x10", "", "٣"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		h := http.Header{fencegate.HeaderSegment: {v}}
		n, msg := ParseSegment(h)
		if msg != "" {
			if n != 0 {
				t.Fatalf("refused %q but returned %d", v, n)
			}
			return
		}
		if n == 0 {
			t.Fatalf("accepted %q as 0", v)
		}
		// Leading zeros are allowed ("007" is 7); otherwise the value spells n.
		got, _, _ := Single(h, fencegate.HeaderSegment)
		if trimZeros(got) != strconv.FormatUint(n, 10) {
			t.Fatalf("%q parsed as %d", v, n)
		}
	})
}

func trimZeros(s string) string {
	for len(s) > 1 && s[0] == '0' {
		s = s[1:]
	}
	return s
}

// FuzzContentDigest: no field value panics the RFC 9530 checker; a field
// it accepts parses as a Dictionary whose verified members all match the
// body (and there is at least one); the correct value of the body in any
// verified algorithm, with or without parameters, is always accepted.
func FuzzContentDigest(f *testing.F) {
	f.Add("sha-256=:LCa0a2j/xo/5m0U8HTBBNBNCLXBkg7+g+YpeiGJm564=:", []byte("hello"))
	f.Add("sha-512=:x:, sha-256=:y:", []byte{})
	f.Add("md5=abc", []byte("x"))
	f.Add("crc32c=:CnKk3w==:", []byte("dog"))
	f.Add("adler=:A9oBlQ==:;p=1, unixsum=:AAAA:", []byte("Wiki"))
	f.Add(`unixcksum=://///w==:, sha-384=:AAAA:;q="a\"b";r=?1;s=-12.345;t=a/b:c`, []byte{})
	f.Add("crc32c=:CnKk3w:, crc32c=:CnKk3w==:", []byte("dog"))
	f.Add("sha-256=(:AA==:), *x=:AA:", []byte("x"))
	f.Add(`a=:AA==:;b="\", c`, []byte("x"))
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		msg := CheckContentDigest(http.Header{fencegate.HeaderDigest: {header}}, body)
		members, perr := parseDigestDictionary(header)
		if msg == "" {
			if perr != "" {
				t.Fatalf("accepted %q, which does not parse: %s", header, perr)
			}
			verified := 0
			for _, a := range digestAlgorithms {
				if want, ok := members[a.name]; ok {
					if string(want) != string(a.sum(body)) {
						t.Fatalf("accepted %q with a wrong %s", header, a.name)
					}
					verified++
				}
			}
			if verified == 0 {
				t.Fatalf("accepted %q with no verified member", header)
			}
		}
		for key := range members {
			p := &sfParser{s: key}
			if _, e := p.key(); e != "" || !p.done() {
				t.Fatalf("%q parsed with key %q", header, key)
			}
		}
		for _, a := range digestAlgorithms {
			good := a.name + "=:" + base64.StdEncoding.EncodeToString(a.sum(body)) + ":"
			if m := CheckContentDigest(http.Header{fencegate.HeaderDigest: {good}}, body); m != "" {
				t.Fatalf("the right %s refused: %s", a.name, m)
			}
			if m := CheckContentDigest(http.Header{fencegate.HeaderDigest: {"x-unknown=:AA==:, " + good + `;p="v", unixsum=:AA==:`}}, body); m != "" {
				t.Fatalf("the right %s beside unverifiable members refused: %s", a.name, m)
			}
		}
	})
}
