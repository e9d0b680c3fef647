package inbound

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/fencegate/fencegate"
)

// The expected values below were computed outside Go: Python's hashlib and
// zlib (sha-256, sha-512, md5, sha, adler), a bitwise CRC-32C (reflected
// polynomial 0x82F63B78) for crc32c, coreutils cksum for unixcksum, and the
// IANA registry's own examples (ADLER32 of "Wiki" is 03da0195, CRC32c of
// "dog" is 0a72a4df); "123456789" is the CRC catalogue's check input.
// {"hello": "world"} is RFC 9530's example content.
const helloWorld = `{"hello": "world"}`

var digestVectors = []struct {
	alg, body, b64 string
}{
	{"sha-256", helloWorld, "X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE="},
	{"sha-512", helloWorld, "WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew=="},
	{"md5", helloWorld, "Sd/dVLAcvNLSq16eXua5uQ=="},
	{"sha", helloWorld, "07CavjDP4u3/TungoUHJO/Wzr4c="},
	{"adler", helloWorld, "OZkGFw=="},      // 0x39990617
	{"adler", "Wiki", "A9oBlQ=="},          // 0x03da0195, the IANA example
	{"crc32c", helloWorld, "Q3lHIA=="},     // 0x43794720
	{"crc32c", "dog", "CnKk3w=="},          // 0x0a72a4df, the IANA example
	{"crc32c", "123456789", "4waSgw=="},    // 0xe3069283, CRC-32C's check value
	{"crc32c", "", "AAAAAA=="},             // the CRC of nothing
	{"unixcksum", helloWorld, "7zsHAA=="},  // cksum: 4013623040
	{"unixcksum", "123456789", "N3pgEQ=="}, // cksum: 930766865
	{"unixcksum", "", "/////w=="},          // cksum: 4294967295
}

// TestDigestAlgorithms: each verified algorithm accepts its real value,
// alone, and refuses the value with one bit flipped, and the 32-bit
// checksums read their value big-endian (the little-endian bytes are a
// mismatch).
func TestDigestAlgorithms(t *testing.T) {
	for _, v := range digestVectors {
		t.Run(v.alg+"/"+strconv.Quote(v.body), func(t *testing.T) {
			raw, err := base64.StdEncoding.DecodeString(v.b64)
			if err != nil {
				t.Fatal(err)
			}
			field := func(b []byte) http.Header {
				return http.Header{fencegate.HeaderDigest: {v.alg + "=:" + base64.StdEncoding.EncodeToString(b) + ":"}}
			}
			if msg := CheckContentDigest(field(raw), []byte(v.body)); msg != "" {
				t.Fatalf("the real %s refused: %s", v.alg, msg)
			}
			flipped := bytes.Clone(raw)
			flipped[len(flipped)-1] ^= 1
			if msg := CheckContentDigest(field(flipped), []byte(v.body)); !strings.Contains(msg, v.alg+" does not match") {
				t.Fatalf("a wrong %s: %q", v.alg, msg)
			}
			if len(raw) == 4 && !bytes.Equal(raw, []byte{raw[3], raw[2], raw[1], raw[0]}) {
				le := []byte{raw[3], raw[2], raw[1], raw[0]}
				if msg := CheckContentDigest(field(le), []byte(v.body)); msg == "" {
					t.Fatalf("%s accepted little-endian", v.alg)
				}
			}
		})
	}
}

// TestDigestCksumMatchesUtility: unixcksum is the POSIX cksum checksum,
// length octets included (the part a plain CRC leaves out), for bodies whose
// length takes zero, one, two and three octets.
func TestDigestCksumMatchesUtility(t *testing.T) {
	path, err := exec.LookPath("cksum")
	if err != nil {
		t.Skip("no cksum utility on this machine")
	}
	for _, n := range []int{0, 1, 255, 256, 65535, 65536, 70001} {
		body := make([]byte, n)
		for i := range body {
			body[i] = byte(i*7 + i>>8)
		}
		cmd := exec.Command(path)
		cmd.Stdin = bytes.NewReader(body)
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		want, err := strconv.ParseUint(strings.Fields(string(out))[0], 10, 32)
		if err != nil {
			t.Fatalf("cksum printed %q", out)
		}
		if got := unixCksum(body); uint64(got) != want {
			t.Fatalf("%d bytes: unixCksum %d, cksum %d", n, got, want)
		}
	}
}

// TestDigestField: the field is an RFC 8941 Dictionary of byte sequences;
// what is verified, ignored and refused.
func TestDigestField(t *testing.T) {
	sha256 := "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:"
	md5 := "md5=:Sd/dVLAcvNLSq16eXua5uQ==:"
	crc := "crc32c=:Q3lHIA==:"
	badCRC := "crc32c=:Q3lHIQ==:"
	cases := []struct {
		name   string
		values []string
		refuse string // "" accepts; otherwise a part of the detail
	}{
		{"absent", nil, ""},
		{"crc32c only", []string{crc}, ""},
		{"wrong crc32c only", []string{badCRC}, "crc32c does not match"},
		{"several verified", []string{sha256 + ", " + md5 + ", " + crc}, ""},
		{"one of several wrong", []string{sha256 + ", " + badCRC}, "crc32c does not match"},
		{"two field lines", []string{sha256, crc}, ""},
		{"parameters ignored", []string{sha256 + `;a=1;b=-2.5;c="x\"y";d=?0;e=tok/en:x;f=:AA==:;g, ` + crc + ";q"}, ""},
		{"OWS around commas", []string{sha256 + " ,\t" + crc + "  "}, ""},
		{"padding left out", []string{"sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE:"}, ""},
		{"unknown algorithm ignored", []string{"sha-384=:AAAA:, " + crc}, ""},
		{"wrong value of an unknown algorithm ignored", []string{"blake3=:AAAA:, " + sha256}, ""},
		{"unixsum is not verified", []string{"unixsum=:AAAA:"}, "no member this sidecar can verify; it verifies sha-256, sha-512, md5, sha, adler, crc32c, unixcksum"},
		{"unknown only", []string{"sha-384=:AAAA:"}, "no member this sidecar can verify"},
		{"empty", []string{""}, "no member this sidecar can verify"},
		{"duplicate key", []string{crc + ", " + crc}, "crc32c appears more than once"},
		{"duplicate key over two lines", []string{badCRC, crc}, "crc32c appears more than once"},
		{"uppercase key", []string{"SHA-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:"}, "malformed"},
		{"not a byte sequence", []string{"sha-256=X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE="}, "not a byte sequence"},
		{"token value of an unknown key", []string{"foo=bar, " + crc}, "not a byte sequence"},
		{"no value", []string{"sha-256"}, "has no value"},
		{"inner list", []string{"sha-256=(:AAAA:)"}, "not a byte sequence"},
		{"unterminated", []string{"sha-256=:X48E"}, "unterminated"},
		{"bad base64 character", []string{"sha-256=:X48E$qOo:"}, "base64"},
		{"impossible base64 length", []string{"sha-256=:X:"}, "base64"},
		{"trailing comma", []string{crc + ","}, "trailing ','"},
		{"missing comma", []string{crc + " " + sha256}, "expected ','"},
		{"bad parameter", []string{crc + ";A=1"}, "parameter"},
		{"bad parameter value", []string{crc + ";a=1.2345"}, "parameter"},
		{"leading comma", []string{", " + crc}, "malformed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tc.values {
				h.Add(fencegate.HeaderDigest, v)
			}
			msg := CheckContentDigest(h, []byte(helloWorld))
			switch {
			case tc.refuse == "" && msg != "":
				t.Fatalf("refused: %s", msg)
			case tc.refuse != "" && !strings.Contains(msg, tc.refuse):
				t.Fatalf("got %q, want a refusal saying %q", msg, tc.refuse)
			}
		})
	}
}
