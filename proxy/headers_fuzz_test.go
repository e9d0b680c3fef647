package proxy

import (
	"net/http"
	"strconv"
	"testing"
)

// FuzzParseSegment: any Fence-Segment value either parses to the decimal
// integer it spells (>= 1) or is refused; never a panic.
func FuzzParseSegment(f *testing.F) {
	for _, s := range []string{"1", "0", "-1", "18446744073709551615", "18446744073709551616", "1,2", " 7 ", "+3", "0x10", "", "٣"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		h := http.Header{HeaderSegment: {v}}
		n, msg := parseSegment(h)
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
		got, _, _ := single(h, HeaderSegment)
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

// FuzzContentDigest: no header value panics the RFC 9530 checker, and the
// correct digest of a body is always accepted.
func FuzzContentDigest(f *testing.F) {
	f.Add("sha-256=:LCa0a2j/xo/5m0U8HTBBNBNCLXBkg7+g+YpeiGJm564=:", []byte("hello"))
	f.Add("sha-512=:x:, sha-256=:y:", []byte{})
	f.Add("md5=abc", []byte("x"))
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		_ = checkContentDigest(http.Header{HeaderDigest: {header}}, body)
	})
}
